package cachecluster

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/layout"
)

// fakeZones answers zones from a table; a node missing from it fails.
type fakeZones map[string]string

func (f fakeZones) Zone(_ context.Context, node string) (string, error) {
	if z, ok := f[node]; ok {
		return z, nil
	}
	return "", errors.New("no such node")
}

// TestMemberDomains checks what the operator publishes of its members'
// nodes and zones: nothing until every data-plane pod runs its release,
// then each scheduled member's node and zone, the previous map's for a
// member whose pod is not scheduled or whose node cannot be read.
func TestMemberDomains(t *testing.T) {
	spec := v1alpha1.CacheClusterSpec{
		Storage: v1alpha1.StorageSpec{Mode: v1alpha1.StorageManaged, Racks: 1, ShardsPerRack: 1},
		Layers:  []v1alpha1.NamedLayer{{Name: "spine", CacheLayerSpec: v1alpha1.CacheLayerSpec{Nodes: ptr.To[int32](3), VirtualNodes: 16}}},
	}
	topo, err := layout.New("shop", spec, []layout.Layer{{Name: "spine", Spec: spec.Layers[0].CacheLayerSpec}})
	if err != nil {
		t.Fatal(err)
	}
	pod := func(name, node, image string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: node,
			Containers: []corev1.Container{{Name: "node", Image: image}, {Name: "redis", Image: "redis:7.4"}}}}
	}
	r := &Reconciler{DataPlaneImage: "distcache:new", Nodes: fakeZones{"n1": "zone-a", "n2": "zone-b"}}
	old := &state{topo: topo, pods: map[string]*corev1.Pod{
		"shop-spine-0": pod("shop-spine-0", "n1", "distcache:new"),
		"shop-spine-1": pod("shop-spine-1", "n2", "distcache:old"),
	}}
	if d := r.domains(context.Background(), old, nil); d.on {
		t.Fatal("domains published while a pod runs an older release")
	}
	prev, err := topo.Map(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	prev.Layers[0].Members[2].Zone, prev.Layers[0].Members[2].Host = "zone-c", "n3"
	s := &state{topo: topo, pods: map[string]*corev1.Pod{
		"shop-spine-0": pod("shop-spine-0", "n1", "distcache:new"),
		"shop-spine-1": pod("shop-spine-1", "n3", "distcache:new"), // n3 cannot be read
		"shop-spine-2": pod("shop-spine-2", "", "distcache:new"),   // not scheduled
	}}
	d := r.domains(context.Background(), s, prev)
	if !d.on {
		t.Fatal("domains not published with every pod on the release")
	}
	a := podAddresser{t: topo, pods: s.pods, prev: prev, domains: d}
	for i, want := range [][2]string{{"zone-a", "n1"}, {"zone-c", "n3"}, {"zone-c", "n3"}} {
		if zone, host := a.MemberDomain("spine", i); zone != want[0] || host != want[1] {
			t.Errorf("member %d in %q/%q, want %q/%q", i, zone, host, want[0], want[1])
		}
	}
	if d := (&Reconciler{DataPlaneImage: "distcache:newer"}).domains(context.Background(), old, prev); !d.on {
		t.Fatal("domains dropped although the published map has them")
	}
}
