package cachecluster_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/operator/controller/cachecluster"
)

// TestNetworkPolicy enables a cluster's NetworkPolicy, checks what it
// admits as the API server stored it, and disables it again.
func TestNetworkPolicy(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	startOperator(t, clk)
	cc := newCluster(t, "np", withStorage(v1alpha1.StorageManaged, 1, 1), withLayer("spine", 1, false),
		func(cc *v1alpha1.CacheCluster) { cc.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Enabled: true} })
	np := &networkingv1.NetworkPolicy{}
	eventually(t, "NetworkPolicy created", func() (bool, error) {
		err := get(t, np, cc.Namespace, cachecluster.NetworkPolicyName(cc.Name))
		return err == nil, client.IgnoreNotFound(err)
	})
	if got := np.Spec.PodSelector.MatchLabels[cachecluster.LabelCluster]; got != cc.Name {
		t.Fatalf("policy selects %v, want the cluster's pods", np.Spec.PodSelector)
	}
	if len(np.Spec.Ingress) != 3 {
		t.Fatalf("%d ingress rules, want the data plane's, the metrics' and Redis's for backups", len(np.Spec.Ingress))
	}
	data := np.Spec.Ingress[0]
	var ports []int32
	for _, p := range data.Ports {
		if *p.Protocol != corev1.ProtocolUDP {
			t.Fatalf("data-plane port %v is not UDP", p)
		}
		ports = append(ports, p.Port.IntVal)
	}
	if !slices.Equal(ports, []int32{cachecluster.ShimPort, cachecluster.NodePort}) {
		t.Fatalf("data-plane ports %v, want the shims' and the nodes'", ports)
	}
	if len(data.From) != 2 || data.From[1].PodSelector.MatchLabels[cachecluster.LabelClient] != cc.Name || data.From[1].NamespaceSelector == nil {
		t.Fatalf("data plane admitted from %+v, want the cluster's pods and its clients in any namespace", data.From)
	}
	if m := np.Spec.Ingress[1]; len(m.From) != 0 || len(m.Ports) != 1 || m.Ports[0].Port.IntVal != cachecluster.MetricsPort {
		t.Fatalf("metrics rule %+v, want the metrics port from anywhere", m)
	}
	if b := np.Spec.Ingress[2]; len(b.Ports) != 1 || b.Ports[0].Port.IntVal != cachecluster.RedisPort || *b.Ports[0].Protocol != corev1.ProtocolTCP ||
		len(b.From) != 1 || b.From[0].PodSelector.MatchLabels[cachecluster.LabelBackupOf] != cc.Name || b.From[0].NamespaceSelector != nil {
		t.Fatalf("Redis rule %+v, want Redis's port from the cluster's backup pods only", b)
	}
	if ref := metav1.GetControllerOf(np); ref == nil || ref.Name != cc.Name {
		t.Fatalf("NetworkPolicy controller %+v, want the CacheCluster", ref)
	}

	// With direct reads the gateways and the clients reach Redis too.
	stored := &v1alpha1.CacheCluster{}
	if err := get(t, stored, cc.Namespace, cc.Name); err != nil {
		t.Fatal(err)
	}
	changed := stored.DeepCopy()
	withDirectReads(true)(changed)
	if err := env.Client.Patch(context.Background(), changed, client.MergeFrom(stored)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "Redis admitted from the gateways and clients", func() (bool, error) {
		if err := get(t, np, cc.Namespace, cachecluster.NetworkPolicyName(cc.Name)); err != nil {
			return false, err
		}
		from := np.Spec.Ingress[2].From
		return len(from) == 3 &&
			from[1].PodSelector.MatchLabels[cachecluster.LabelComponent] == cachecluster.ComponentGateway && from[1].NamespaceSelector == nil &&
			from[2].PodSelector.MatchLabels[cachecluster.LabelClient] == cc.Name && from[2].NamespaceSelector != nil, nil
	})

	if err := get(t, stored, cc.Namespace, cc.Name); err != nil {
		t.Fatal(err)
	}
	changed = stored.DeepCopy()
	changed.Spec.NetworkPolicy.Enabled = false
	if err := env.Client.Patch(context.Background(), changed, client.MergeFrom(stored)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "NetworkPolicy deleted", func() (bool, error) {
		err := get(t, &networkingv1.NetworkPolicy{}, cc.Namespace, cachecluster.NetworkPolicyName(cc.Name))
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}
