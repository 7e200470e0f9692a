package cachecluster

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/layout"
)

// Where a gateway pod mounts the Secrets of spec.gateway: its users
// (usersSecretName) and its TLS certificate (tlsSecretName).
const (
	GatewayUsersPath = "/etc/distcache/gateway-users"
	GatewayTLSPath   = "/etc/distcache/gateway-tls"
)

// GatewayName names a cluster's gateway Deployment or DaemonSet, Service
// and NetworkPolicy.
func GatewayName(cluster string) string { return cluster + "-gateway" }

// gatewayReplicas is spec.gateway.replicas, 1 when unset.
func gatewayReplicas(cc *v1alpha1.CacheCluster) int32 {
	if r := cc.Spec.Gateway.Replicas; r != nil {
		return *r
	}
	return 1
}

// gatewayMode is spec.gateway.mode, Deployment when unset.
func gatewayMode(cc *v1alpha1.CacheCluster) v1alpha1.GatewayMode {
	if m := cc.Spec.Gateway.Mode; m != "" {
		return m
	}
	return v1alpha1.GatewayDeployment
}

// gatewayServicePort is the gateway Service's port, spec.gateway.port.
func gatewayServicePort(cc *v1alpha1.CacheCluster) int32 {
	if p := cc.Spec.Gateway.Port; p != 0 {
		return p
	}
	return GatewayPort
}

// gatewayContainerPort is the port the gateway pods listen on for Redis
// clients: GatewayPort on the pod network, the Service's port on the
// node's network (hostNetwork: the container port is the host port).
func gatewayContainerPort(cc *v1alpha1.CacheCluster) int32 {
	if cc.Spec.Gateway.HostNetwork {
		return gatewayServicePort(cc)
	}
	return GatewayPort
}

// GatewayEndpoint is where Redis clients inside the Kubernetes cluster reach
// a cluster's gateway: its Service's DNS name and port.
func GatewayEndpoint(cc *v1alpha1.CacheCluster) string {
	return fmt.Sprintf("%s.%s.svc:%d", GatewayName(cc.Name), cc.Namespace, gatewayServicePort(cc))
}

// reconcileGateway keeps the cluster's Redis-compatible gateway: `distcache
// gateway` pods following the map ConfigMap as the data-plane pods do, run
// by a Deployment or a DaemonSet (spec.gateway.mode; the other one is
// deleted), a Service in front of them, with a cluster face over several
// pods a headless Service through which they find each other
// (gatewaypeers.go) and, with the cluster's NetworkPolicy, a policy
// admitting the clients to their Redis port. With replicas 0 it deletes
// them. What it finds of the workload goes into
// s.gateway, for GatewayReady.
func (r *Reconciler) reconcileGateway(ctx context.Context, s *state) (ctrl.Result, error) {
	meta := metav1.ObjectMeta{Name: GatewayName(s.cc.Name), Namespace: s.cc.Namespace}
	dep, ds := &appsv1.Deployment{ObjectMeta: meta}, &appsv1.DaemonSet{ObjectMeta: meta}
	svc, np := &corev1.Service{ObjectMeta: meta}, &networkingv1.NetworkPolicy{ObjectMeta: meta}
	peers := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: GatewayPeersName(s.cc.Name), Namespace: s.cc.Namespace}}
	if gatewayReplicas(s.cc) == 0 {
		s.gateway = &gatewayObservation{disabled: true}
		return ctrl.Result{}, r.deleteAll(ctx, dep, ds, svc, np, peers)
	}
	if err := r.apply(ctx, s.cc, svc, func() { r.mutateGatewayService(s.cc, svc) }); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.reconcileGatewayPeers(ctx, s.cc, peers); err != nil {
		return ctrl.Result{}, err
	}
	obs, err := r.applyGatewayWorkload(ctx, s.cc, dep, ds)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.gateway = obs
	if p := s.cc.Spec.NetworkPolicy; p == nil || !p.Enabled {
		return ctrl.Result{}, r.deleteAll(ctx, np)
	}
	return ctrl.Result{}, r.apply(ctx, s.cc, np, func() {
		np.Labels = labels(s.cc, ComponentGateway)
		np.Spec = gatewayPolicySpec(s.cc)
	})
}

// applyGatewayWorkload creates or updates the gateway's workload of
// spec.gateway.mode, then deletes the workload of the other mode if there
// is one (after a change of mode: the Service selects the pods of both
// meanwhile), and returns what the workload's status says.
func (r *Reconciler) applyGatewayWorkload(ctx context.Context, cc *v1alpha1.CacheCluster, dep *appsv1.Deployment, ds *appsv1.DaemonSet) (*gatewayObservation, error) {
	if gatewayMode(cc) == v1alpha1.GatewayDaemonSet {
		if err := r.apply(ctx, cc, ds, func() { r.mutateGatewayDaemonSet(cc, ds) }); err != nil {
			return nil, err
		}
		return observeDaemonSet(ds), r.deleteIfCached(ctx, dep)
	}
	if err := r.apply(ctx, cc, dep, func() { r.mutateGatewayDeployment(cc, dep) }); err != nil {
		return nil, err
	}
	return observeDeployment(dep), r.deleteIfCached(ctx, ds)
}

// deleteAll deletes objs, those already gone included.
func (r *Reconciler) deleteAll(ctx context.Context, objs ...client.Object) error {
	for _, o := range objs {
		if err := r.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("cannot delete %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

// deleteIfCached deletes obj if the operator's cache holds it: on every
// reconcile, a lookup in memory rather than a request to the API server.
func (r *Reconciler) deleteIfCached(ctx context.Context, obj client.Object) error {
	err := r.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot get %T %s: %w", obj, obj.GetName(), err)
	}
	return r.deleteAll(ctx, obj)
}

// mutateGatewayDeployment sets the gateway Deployment (mode Deployment).
func (r *Reconciler) mutateGatewayDeployment(cc *v1alpha1.CacheCluster, dep *appsv1.Deployment) {
	lbl := labels(cc, ComponentGateway)
	dep.Labels = lbl
	dep.Spec.Replicas = ptr.To(gatewayReplicas(cc))
	dep.Spec.Selector = &metav1.LabelSelector{MatchLabels: lbl}
	r.setGatewayPod(cc, &dep.Spec.Template)
}

// mutateGatewayDaemonSet sets the gateway DaemonSet (mode DaemonSet): the
// same pods as the Deployment's, one on every schedulable node.
func (r *Reconciler) mutateGatewayDaemonSet(cc *v1alpha1.CacheCluster, ds *appsv1.DaemonSet) {
	lbl := labels(cc, ComponentGateway)
	ds.Labels = lbl
	ds.Spec.Selector = &metav1.LabelSelector{MatchLabels: lbl}
	r.setGatewayPod(cc, &ds.Spec.Template)
}

// setGatewayPod sets the gateway's pod template, the same for both
// workloads. It sets the fields it decides one by one, keeping those the
// API server defaulted.
//
// On the node's network (spec.gateway.hostNetwork) the pod listens for
// Redis clients on the Service's port of its node (container port = host
// port; its metrics port 9100 becomes a host port too), resolves the
// cluster's DNS names (ClusterFirstWithHostNet: the partition map names
// the data-plane pods by them), and its DistCache client's UDP socket,
// --client-addr 0.0.0.0:0, is an ephemeral port on the node's addresses:
// the cache nodes and shims answer to the address a request came from.
func (r *Reconciler) setGatewayPod(cc *v1alpha1.CacheCluster, tpl *corev1.PodTemplateSpec) {
	image, _, pull := r.images(cc)
	hostNet, port := cc.Spec.Gateway.HostNetwork, gatewayContainerPort(cc)
	args := append([]string{"gateway", fmt.Sprintf("--redis-addr=0.0.0.0:%d", port), "--client-addr=0.0.0.0:0"}, mapConfigMapArgs(cc, layout.BackstopMapPoll)...)
	args = append(args, layout.DataPlaneArgs(&cc.Spec)...)
	c := withDataPlaneKey(dataPlaneContainer("gateway", image, pull, args, 0))
	// Its node, from which it learns its zone in the map (--host).
	c.Env = append(c.Env, corev1.EnvVar{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"},
	}})
	c.Ports = []corev1.ContainerPort{
		{Name: "redis", ContainerPort: port, Protocol: corev1.ProtocolTCP},
		{Name: "metrics", ContainerPort: MetricsPort, Protocol: corev1.ProtocolTCP},
	}
	if hostNet {
		c.Ports[0].HostPort, c.Ports[1].HostPort = port, MetricsPort
	}
	c.Resources = cc.Spec.Gateway.Resources
	setGatewayClusterFace(cc, &c)
	volumes := []corev1.Volume{dataPlaneKeyVolume(cc)}
	for _, m := range []struct {
		secret, name, path string
		flags              []string
	}{
		{cc.Spec.Gateway.UsersSecretName, "gateway-users", GatewayUsersPath, []string{"--users-dir=" + GatewayUsersPath}},
		{cc.Spec.Gateway.TLSSecretName, "gateway-tls", GatewayTLSPath,
			[]string{"--tls-cert=" + GatewayTLSPath + "/tls.crt", "--tls-key=" + GatewayTLSPath + "/tls.key"}},
	} {
		if m.secret == "" {
			continue
		}
		volumes = append(volumes, corev1.Volume{Name: m.name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: m.secret, DefaultMode: ptr.To(secretMode),
		}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: m.name, MountPath: m.path, ReadOnly: true})
		c.Args = append(c.Args, m.flags...)
	}
	if dp := cc.Spec.DataPlane; dp != nil && dp.DirectReads {
		// It reaches the shards' Redis itself (RedisAddress).
		access := remoteRedisAccess(&cc.Spec.Storage)
		c.Args = append(c.Args, access.args...)
		c.VolumeMounts = append(c.VolumeMounts, access.mounts...)
		volumes = append(volumes, access.volumes...)
	}
	tpl.Labels = labels(cc, ComponentGateway)
	tpl.Spec.Containers = []corev1.Container{c}
	tpl.Spec.Volumes = volumes
	tpl.Spec.ServiceAccountName = DataPlaneName(cc.Name)
	tpl.Spec.SecurityContext = podSecurity()
	tpl.Spec.HostNetwork = hostNet
	// A DaemonSet's pods are one per node already: no default spread.
	setScheduling(&tpl.Spec, cc.Spec.Gateway.Scheduling, labels(cc, ComponentGateway), gatewayMode(cc) == v1alpha1.GatewayDeployment)
	tpl.Spec.DNSPolicy = corev1.DNSClusterFirst
	if hostNet {
		tpl.Spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
	}
}

// mutateGatewayService sets the gateway Service's type, selector and port,
// keeping what the API server assigned (cluster IP, node port).
func (r *Reconciler) mutateGatewayService(cc *v1alpha1.CacheCluster, svc *corev1.Service) {
	svc.Labels = labels(cc, ComponentGateway)
	svc.Spec.Type = cc.Spec.Gateway.ServiceType
	if svc.Spec.Type == "" {
		svc.Spec.Type = corev1.ServiceTypeClusterIP
	}
	svc.Spec.Selector = labels(cc, ComponentGateway)
	port := corev1.ServicePort{Name: "redis", Protocol: corev1.ProtocolTCP, Port: gatewayServicePort(cc), TargetPort: intstr.FromString("redis")}
	if i := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == "redis" }); i >= 0 && svc.Spec.Type != corev1.ServiceTypeClusterIP {
		port.NodePort = svc.Spec.Ports[i].NodePort
	}
	svc.Spec.Ports = []corev1.ServicePort{port}
}

// gatewayPolicySpec admits the cluster's clients to the gateway pods'
// Redis port (the cluster's own policy admits the rest: the gateway pods
// are the cluster's pods).
func gatewayPolicySpec(cc *v1alpha1.CacheCluster) networkingv1.NetworkPolicySpec {
	tcp, port := corev1.ProtocolTCP, intstr.FromInt32(gatewayContainerPort(cc))
	clients := &metav1.LabelSelector{MatchLabels: map[string]string{LabelClient: cc.Name}}
	if c := cc.Spec.NetworkPolicy.Clients; c != nil {
		clients = c.DeepCopy()
	}
	return networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: labels(cc, ComponentGateway)},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		Ingress: []networkingv1.NetworkPolicyIngressRule{{
			Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &port}},
			From:  []networkingv1.NetworkPolicyPeer{{PodSelector: clients, NamespaceSelector: &metav1.LabelSelector{}}},
		}},
	}
}
