package cachecluster

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/operator/api/v1alpha1"
)

// Where a gateway pod mounts the Secrets of spec.gateway: its users
// (usersSecretName) and its TLS certificate (tlsSecretName).
const (
	GatewayUsersPath = "/etc/distcache/gateway-users"
	GatewayTLSPath   = "/etc/distcache/gateway-tls"
)

// GatewayName names a cluster's gateway Deployment, Service and
// NetworkPolicy.
func GatewayName(cluster string) string { return cluster + "-gateway" }

// gatewayReplicas is spec.gateway.replicas, 1 when unset.
func gatewayReplicas(cc *v1alpha1.CacheCluster) int32 {
	if r := cc.Spec.Gateway.Replicas; r != nil {
		return *r
	}
	return 1
}

// reconcileGateway keeps the cluster's Redis-compatible gateway: a
// Deployment of `distcache gateway` pods following the map ConfigMap as
// the data-plane pods do, a Service in front of them and, with the
// cluster's NetworkPolicy, a policy admitting the clients to their Redis
// port. With replicas 0 it deletes them.
func (r *Reconciler) reconcileGateway(ctx context.Context, s *state) (ctrl.Result, error) {
	meta := metav1.ObjectMeta{Name: GatewayName(s.cc.Name), Namespace: s.cc.Namespace}
	dep, svc, np := &appsv1.Deployment{ObjectMeta: meta}, &corev1.Service{ObjectMeta: meta}, &networkingv1.NetworkPolicy{ObjectMeta: meta}
	if gatewayReplicas(s.cc) == 0 {
		return ctrl.Result{}, r.deleteAll(ctx, dep, svc, np)
	}
	if err := r.apply(ctx, s.cc, svc, func() { r.mutateGatewayService(s.cc, svc) }); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.apply(ctx, s.cc, dep, func() { r.mutateGateway(s.cc, dep) }); err != nil {
		return ctrl.Result{}, err
	}
	if p := s.cc.Spec.NetworkPolicy; p == nil || !p.Enabled {
		return ctrl.Result{}, r.deleteAll(ctx, np)
	}
	return ctrl.Result{}, r.apply(ctx, s.cc, np, func() {
		np.Labels = labels(s.cc, ComponentGateway)
		np.Spec = gatewayPolicySpec(s.cc)
	})
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

// mutateGateway sets the gateway Deployment.
func (r *Reconciler) mutateGateway(cc *v1alpha1.CacheCluster, dep *appsv1.Deployment) {
	lbl := labels(cc, ComponentGateway)
	image, _, pull := r.images(cc)
	args := append([]string{"gateway", fmt.Sprintf("--redis-addr=0.0.0.0:%d", GatewayPort), "--client-addr=0.0.0.0:0"}, mapConfigMapArgs(cc)...)
	c := withDataPlaneKey(dataPlaneContainer("gateway", image, pull, args, 0))
	c.Ports = []corev1.ContainerPort{
		{Name: "redis", ContainerPort: GatewayPort, Protocol: corev1.ProtocolTCP},
		{Name: "metrics", ContainerPort: MetricsPort, Protocol: corev1.ProtocolTCP},
	}
	c.Resources = cc.Spec.Gateway.Resources
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
	dep.Labels = lbl
	dep.Spec.Replicas = ptr.To(gatewayReplicas(cc))
	dep.Spec.Selector = &metav1.LabelSelector{MatchLabels: lbl}
	dep.Spec.Template.Labels = lbl
	dep.Spec.Template.Spec.Containers = []corev1.Container{c}
	dep.Spec.Template.Spec.Volumes = volumes
	dep.Spec.Template.Spec.ServiceAccountName = DataPlaneName(cc.Name)
	dep.Spec.Template.Spec.SecurityContext = podSecurity()
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
	port := corev1.ServicePort{Name: "redis", Protocol: corev1.ProtocolTCP, Port: cc.Spec.Gateway.Port, TargetPort: intstr.FromString("redis")}
	if port.Port == 0 {
		port.Port = GatewayPort
	}
	if i := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == "redis" }); i >= 0 && svc.Spec.Type != corev1.ServiceTypeClusterIP {
		port.NodePort = svc.Spec.Ports[i].NodePort
	}
	svc.Spec.Ports = []corev1.ServicePort{port}
}

// gatewayPolicySpec admits the cluster's clients to the gateway pods'
// Redis port (the cluster's own policy admits the rest: the gateway pods
// are the cluster's pods).
func gatewayPolicySpec(cc *v1alpha1.CacheCluster) networkingv1.NetworkPolicySpec {
	tcp, port := corev1.ProtocolTCP, intstr.FromInt32(GatewayPort)
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
