package cachecluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/distcache/distcache/api/v1alpha1"
)

// GatewayPeersName names the headless Service through which a cluster's
// gateway pods find each other for their cluster face.
func GatewayPeersName(cluster string) string { return cluster + "-gateway-peers" }

// gatewayNeedsPeers says whether the gateway pods must find each other:
// a cluster face (spec.gateway.clusterFace) over more than one pod, a
// Deployment of several replicas or a DaemonSet.
func gatewayNeedsPeers(cc *v1alpha1.CacheCluster) bool {
	return cc.Spec.Gateway.ClusterFace && (gatewayMode(cc) == v1alpha1.GatewayDaemonSet || gatewayReplicas(cc) > 1)
}

// setGatewayClusterFace gives the gateway container its cluster face
// (spec.gateway.clusterFace): --cluster-face, announced at its pod's IP
// from the downward API (its node's IP on the node's network), and the
// DNS name of its peers when it has some.
func setGatewayClusterFace(cc *v1alpha1.CacheCluster, c *corev1.Container) {
	if !cc.Spec.Gateway.ClusterFace {
		return
	}
	env, field := "POD_IP", "status.podIP"
	if cc.Spec.Gateway.HostNetwork {
		env, field = "HOST_IP", "status.hostIP"
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: env, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: field},
	}})
	c.Args = append(c.Args, "--cluster-face", "--cluster-announce-ip=$("+env+")")
	if gatewayNeedsPeers(cc) {
		c.Args = append(c.Args, fmt.Sprintf("--cluster-peers-dns=%s.%s.svc", GatewayPeersName(cc.Name), cc.Namespace))
	}
}

// reconcileGatewayPeers keeps the headless Service svc while the gateway
// pods need to find each other, and deletes it when they no longer do.
// It lists only Ready pods: a gateway announces the slots of the pods
// that serve.
func (r *Reconciler) reconcileGatewayPeers(ctx context.Context, cc *v1alpha1.CacheCluster, svc *corev1.Service) error {
	if !gatewayNeedsPeers(cc) {
		return r.deleteIfCached(ctx, svc)
	}
	return r.apply(ctx, cc, svc, func() {
		svc.Labels = labels(cc, ComponentGateway)
		svc.Spec.ClusterIP = corev1.ClusterIPNone
		svc.Spec.Selector = labels(cc, ComponentGateway)
		svc.Spec.PublishNotReadyAddresses = false
		svc.Spec.Ports = []corev1.ServicePort{{Name: "redis", Protocol: corev1.ProtocolTCP,
			Port: gatewayContainerPort(cc), TargetPort: intstr.FromString("redis")}}
	})
}
