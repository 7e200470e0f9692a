package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
)

// GatewayMode is the kind of workload that runs a cluster's gateway pods.
// +kubebuilder:validation:Enum=Deployment;DaemonSet
type GatewayMode string

const (
	// GatewayDeployment runs spec.gateway.replicas gateway pods as a
	// Deployment, wherever the scheduler puts them.
	GatewayDeployment GatewayMode = "Deployment"
	// GatewayDaemonSet runs one gateway pod on every schedulable node as a
	// DaemonSet, optionally on the node's network (hostNetwork).
	GatewayDaemonSet GatewayMode = "DaemonSet"
)

// GatewaySpec is the cluster's Redis-compatible gateway: a Deployment (or,
// with mode DaemonSet, a DaemonSet) and a Service named <cluster>-gateway
// (standalone mode runs one gateway process unless replicas is 0, whatever
// the mode).
//
// +kubebuilder:validation:XValidation:rule="!has(self.hostNetwork) || !self.hostNetwork || (has(self.mode) && self.mode == 'DaemonSet')",message="gateway.hostNetwork is only for mode: DaemonSet: on the node's network two gateway pods of a Deployment could land on one node and both need its port; a DaemonSet runs one per node"
// +kubebuilder:validation:XValidation:rule="!has(self.mode) || self.mode != 'DaemonSet' || !has(self.replicas) || self.replicas <= 1",message="gateway.replicas cannot be set with mode: DaemonSet, which runs one gateway pod on every node: leave replicas at its default 1, or set 0 for no gateway"
// +kubebuilder:validation:XValidation:rule="!has(self.hostNetwork) || !self.hostNetwork || !has(self.port) || self.port >= 1024",message="gateway.port must be at least 1024 with hostNetwork: the gateway pods listen on it on the node's network as a non-root user without capabilities, which cannot bind a privileged port"
type GatewaySpec struct {
	// Replicas of the gateway Deployment; 0 runs no gateway. With mode
	// DaemonSet the node count decides, and replicas may only be left at
	// its default 1 (a gateway pod on every node) or set to 0 (none).
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// Mode is how the gateway pods run: Deployment (the default) runs
	// replicas of them wherever the scheduler puts them; DaemonSet runs one
	// on every schedulable node. The Service <cluster>-gateway selects them
	// either way. Changing it replaces the one workload with the other.
	// Standalone mode ignores it.
	// +kubebuilder:default=Deployment
	// +optional
	Mode GatewayMode `json:"mode,omitempty"`
	// HostNetwork runs the gateway pods on their node's network (mode
	// DaemonSet only): each pod listens for Redis clients on Port of its
	// node's addresses (a hostPort, at least 1024) and serves its metrics
	// on the node's port 9100, so both ports must be free on every node;
	// the namespace's Pod Security level must allow host networking
	// (privileged). Not with networkPolicy.enabled: network plugins do not
	// match host-network pods by their labels. Standalone mode ignores it.
	// +optional
	HostNetwork bool `json:"hostNetwork,omitempty"`
	// Port is the Service's Redis port, and with hostNetwork the port the
	// gateway pods listen on on their node.
	// +kubebuilder:default=6379
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	Port int32 `json:"port,omitempty"`
	// ServiceType of the gateway's Service.
	// +kubebuilder:default=ClusterIP
	// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer
	// +optional
	ServiceType corev1.ServiceType `json:"serviceType,omitempty"`
	// Resources of each gateway container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	// Scheduling is where the scheduler may put the gateway pods. Unset:
	// a Deployment's pods spread over nodes and zones. Standalone mode
	// ignores it.
	// +optional
	Scheduling *PodScheduling `json:"scheduling,omitempty"`
	// UsersSecretName names a Secret in the cluster's namespace with a key
	// per user holding its password: clients must AUTH as one of them.
	// Rotating a password needs no restart. Unset: every client is the
	// default user. Not supported in standalone mode.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +optional
	UsersSecretName string `json:"usersSecretName,omitempty"`
	// TLSSecretName names a kubernetes.io/tls Secret (tls.crt, tls.key,
	// e.g. cert-manager's) in the cluster's namespace: the gateway serves
	// Redis clients over TLS only, and a renewed certificate applies
	// without a restart. Not supported in standalone mode.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +optional
	TLSSecretName string `json:"tlsSecretName,omitempty"`
	// ClusterFace makes the gateway answer Redis Cluster clients (go-redis
	// ClusterClient, redis-py RedisCluster, Jedis JedisCluster) as a
	// Redis Cluster whose nodes are the gateway pods: CLUSTER SLOTS, SHARDS
	// and NODES name each pod by its IP (its node's IP with hostNetwork),
	// with the 16384 slots spread evenly over them, so such clients spread
	// their connections over the pods. Every gateway pod still serves
	// every key: no client is redirected. With more than one replica, or
	// mode DaemonSet, the pods find each other through a headless Service
	// named <cluster>-gateway-peers. Off: the cluster commands get the
	// error of a Redis without cluster support.
	// +optional
	ClusterFace bool `json:"clusterFace,omitempty"`
}

// GatewayStatus is a cluster's Redis-compatible gateway as the operator
// observed its workload.
type GatewayStatus struct {
	// Mode is the kind of workload running the gateway pods: Deployment
	// or DaemonSet.
	Mode GatewayMode `json:"mode"`
	// DesiredReplicas is the number of gateway pods that should run:
	// spec.gateway.replicas for a Deployment, the nodes that should run
	// one for a DaemonSet.
	DesiredReplicas int32 `json:"desiredReplicas"`
	// ReadyReplicas counts the gateway pods that are Ready.
	ReadyReplicas int32 `json:"readyReplicas"`
	// Endpoint is where Redis clients inside the Kubernetes cluster
	// connect: the gateway Service's DNS name and port, e.g.
	// shop-gateway.default.svc:6379.
	Endpoint string `json:"endpoint"`
}
