package cachecluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/api/v1alpha1"
)

// LabelClient marks the pods that may reach a cluster's data plane when its
// NetworkPolicy names no other client selector: distcache.io/client=<cluster>.
const LabelClient = "distcache.io/client"

// NetworkPolicyName is the name of a cluster's NetworkPolicy.
func NetworkPolicyName(cluster string) string { return cluster + "-data-plane" }

// reconcileNetworkPolicy keeps the cluster's NetworkPolicy when
// spec.networkPolicy.enabled, and deletes it otherwise.
func (r *Reconciler) reconcileNetworkPolicy(ctx context.Context, s *state) (ctrl.Result, error) {
	np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: NetworkPolicyName(s.cc.Name), Namespace: s.cc.Namespace}}
	if p := s.cc.Spec.NetworkPolicy; p == nil || !p.Enabled {
		if err := r.Delete(ctx, np); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("cannot delete NetworkPolicy of %s: %w", s.cc.Name, err)
		}
		return ctrl.Result{}, nil
	}
	if err := r.apply(ctx, s.cc, np, func() {
		np.Labels = labels(s.cc, "network-policy")
		np.Spec = networkPolicySpec(s.cc, switchPeers(s)...)
	}); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// networkPolicySpec admits, to every pod of cc: the data-plane ports (UDP)
// from cc's own pods, from its clients and from its switches (peers), and
// the metrics port (TCP) from anywhere, for Prometheus, and Redis's port
// from redisPeers. Everything else — Redis above all, whose port is
// otherwise only for the shim beside it — is refused.
func networkPolicySpec(cc *v1alpha1.CacheCluster, switches ...networkingv1.NetworkPolicyPeer) networkingv1.NetworkPolicySpec {
	udp, tcp := corev1.ProtocolUDP, corev1.ProtocolTCP
	port := func(p corev1.Protocol, n int32) networkingv1.NetworkPolicyPort {
		v := intstr.FromInt32(n)
		return networkingv1.NetworkPolicyPort{Protocol: &p, Port: &v}
	}
	clients := &metav1.LabelSelector{MatchLabels: map[string]string{LabelClient: cc.Name}}
	if c := cc.Spec.NetworkPolicy.Clients; c != nil {
		clients = c.DeepCopy()
	}
	return networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{LabelCluster: cc.Name}},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		Ingress: []networkingv1.NetworkPolicyIngressRule{
			{
				Ports: []networkingv1.NetworkPolicyPort{port(udp, ShimPort), port(udp, NodePort)},
				From: append([]networkingv1.NetworkPolicyPeer{
					{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelCluster: cc.Name}}},
					{PodSelector: clients, NamespaceSelector: &metav1.LabelSelector{}},
				}, switches...),
			},
			{Ports: []networkingv1.NetworkPolicyPort{port(tcp, MetricsPort)}},
			{Ports: []networkingv1.NetworkPolicyPort{port(tcp, RedisPort)}, From: redisPeers(cc, clients)},
		},
	}
}

// redisPeers are the pods that may reach the shards' Redis: the cluster's
// backup pods (backup.go), and with spec.dataPlane.directReads its
// gateways and clients, which read and write it directly.
func redisPeers(cc *v1alpha1.CacheCluster, clients *metav1.LabelSelector) []networkingv1.NetworkPolicyPeer {
	peers := []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelBackupOf: cc.Name}}}}
	if dp := cc.Spec.DataPlane; dp != nil && dp.DirectReads {
		peers = append(peers,
			networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: labels(cc, ComponentGateway)}},
			networkingv1.NetworkPolicyPeer{PodSelector: clients, NamespaceSelector: &metav1.LabelSelector{}})
	}
	return peers
}
