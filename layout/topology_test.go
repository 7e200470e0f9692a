package layout_test

import (
	"errors"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/internal/testing/topotest"
	"github.com/distcache/distcache/layout"
)

func layer(name string, opts ...func(*v1alpha1.CacheLayerSpec)) v1alpha1.NamedLayer {
	l := v1alpha1.NamedLayer{Name: name}
	for _, o := range opts {
		o(&l.CacheLayerSpec)
	}
	return l
}

func nodes(n int32) func(*v1alpha1.CacheLayerSpec) {
	return func(s *v1alpha1.CacheLayerSpec) { s.Nodes = ptr.To(n) }
}

func bound(s *v1alpha1.CacheLayerSpec) { s.BoundToRacks = true }

func switchBacked(s *v1alpha1.CacheLayerSpec) {
	s.Backend, s.Switch = v1alpha1.BackendSwitch, &v1alpha1.SwitchLayerSpec{FabricRef: "f", Role: v1alpha1.RoleSpine}
}

func TestResolveLayers(t *testing.T) {
	refs := map[string]*v1alpha1.CacheLayerSpec{"spine": {Nodes: ptr.To[int32](4)}}
	get := func(name string) (*v1alpha1.CacheLayerSpec, bool) { s, ok := refs[name]; return s, ok }
	got, err := layout.ResolveLayers(&v1alpha1.CacheClusterSpec{LayerRefs: []string{"spine"}}, get)
	if err != nil || len(got) != 1 || got[0].Name != "spine" || *got[0].Spec.Nodes != 4 {
		t.Fatalf("refs: %+v, %v", got, err)
	}
	if _, err := layout.ResolveLayers(&v1alpha1.CacheClusterSpec{LayerRefs: []string{"spine", "leaf"}}, get); !errors.Is(err, layout.ErrLayerNotFound) {
		t.Fatalf("missing ref: err %v, want ErrLayerNotFound", err)
	}
	inline := &v1alpha1.CacheClusterSpec{Layers: []v1alpha1.NamedLayer{layer("a", nodes(1)), layer("b", bound)}}
	if got, err := layout.ResolveLayers(inline, get); err != nil || len(got) != 2 || got[1].Name != "b" {
		t.Fatalf("inline: %+v, %v", got, err)
	}
}

func TestMapSpec(t *testing.T) {
	spec := v1alpha1.CacheClusterSpec{
		Storage: v1alpha1.StorageSpec{Racks: 3, ShardsPerRack: 2},
		Layers: []v1alpha1.NamedLayer{
			layer("spine", nodes(2), func(s *v1alpha1.CacheLayerSpec) { s.HashSeed = ptr.To[int64](42) }),
			layer("fabric", switchBacked),
			layer("leaf", bound),
		},
	}
	c := topotest.New(t, "shop", spec)
	ms := c.MapSpec(nil)
	if ms.Cluster != "shop" || ms.Racks != 3 || ms.ShardsPerRack != 2 || len(ms.Layers) != 2 {
		t.Fatalf("map spec %+v: want 3×2 storage and the two software layers", ms)
	}
	if l := ms.Layers[0]; l.Name != "spine" || l.Nodes != 2 || l.Seed != 42 {
		t.Fatalf("spine %+v", l)
	}
	if l := ms.Layers[1]; l.Name != "leaf" || l.Nodes != 3 || !l.BoundToRacks {
		t.Fatalf("leaf %+v: a bound layer has one node per rack", l)
	}
	m, err := c.Map(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Layers[0].Members[1].Name; got != c.LayerSetName("spine")+"-1" {
		t.Fatalf("member name %q is not its StatefulSet pod's name", got)
	}
	if got := m.Storage.Racks[2].Shards[1].Name; got != c.RackName(2)+"-1" || got != c.ShardName(2, 1) {
		t.Fatalf("shard name %q is not its StatefulSet pod's name", got)
	}
}

func TestNewRejectsEmptyLayer(t *testing.T) {
	spec := v1alpha1.CacheClusterSpec{Layers: []v1alpha1.NamedLayer{layer("spine")}}
	layers, _ := layout.ResolveLayers(&spec, nil)
	if _, err := layout.New("shop", spec, layers); err == nil {
		t.Fatal("a software layer without nodes was accepted")
	}
}
