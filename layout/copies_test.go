package layout_test

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/internal/testing/topotest"
	"github.com/distcache/distcache/layout"
	"github.com/distcache/distcache/redundancy"
)

func entries(n int32) func(*v1alpha1.CacheLayerSpec) {
	return func(s *v1alpha1.CacheLayerSpec) { s.Capacity.Entries = n }
}

// TestCopies: spec.hotKeys.replication becomes the decision's policy, the
// fallback capacities (standalone mode's emulated ones) fill what the spec
// leaves unset, and the smallest layer's cache is a node's slots.
func TestCopies(t *testing.T) {
	tests := []struct {
		name          string
		r             *v1alpha1.HotKeyReplicationSpec
		node, storage float64
		want          layout.CopiesPolicy
		ok            bool
	}{
		{name: "unset", r: nil},
		{name: "disabled", r: &v1alpha1.HotKeyReplicationSpec{NodeCapacity: 5}},
		{name: "defaults", r: &v1alpha1.HotKeyReplicationSpec{Enabled: true}, ok: true,
			want: layout.CopiesPolicy{Interval: 5 * time.Second, Plan: redundancy.Config{
				NodeCapacity: layout.DefaultNodeCapacity, ServerCapacity: layout.DefaultStorageCapacity, Slots: 100}}},
		{name: "fallback capacities", r: &v1alpha1.HotKeyReplicationSpec{Enabled: true}, node: 3000, storage: 300, ok: true,
			want: layout.CopiesPolicy{Interval: 5 * time.Second, Plan: redundancy.Config{NodeCapacity: 3000, ServerCapacity: 300, Slots: 100}}},
		{name: "every knob", node: 3000, storage: 300, ok: true,
			r: &v1alpha1.HotKeyReplicationSpec{
				Enabled: true, Interval: &metav1.Duration{Duration: 2 * time.Second}, MaxCopies: 4, MinRate: 50,
				NodeCapacity: 9000, StorageCapacity: 900, CoherenceCostPercent: 150, HysteresisPercent: 10, HeadroomPercent: ptr.To[int32](0),
			},
			want: layout.CopiesPolicy{Interval: 2 * time.Second, Plan: redundancy.Config{
				NodeCapacity: 9000, ServerCapacity: 900, MaxCopies: 4, MinRate: 50, CoherenceCost: 1.5, Hysteresis: 0.1, Headroom: 1, Slots: 100}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := v1alpha1.CacheClusterSpec{
				Storage: v1alpha1.StorageSpec{Racks: 2, ShardsPerRack: 1},
				Layers:  []v1alpha1.NamedLayer{layer("spine", nodes(2), entries(300)), layer("leaf", bound, entries(100))},
				HotKeys: v1alpha1.HotKeySpec{Replication: tc.r},
			}
			got, ok := topotest.New(t, "shop", spec).Copies(tc.node, tc.storage)
			if ok != tc.ok || got != tc.want {
				t.Fatalf("Copies = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestSizing: spec.cacheBudget becomes the split's policy over the
// software layers of capacity.auto, which start with their entries.
func TestSizing(t *testing.T) {
	auto := func(s *v1alpha1.CacheLayerSpec) { s.Capacity.Auto = true }
	spec := v1alpha1.CacheClusterSpec{
		Storage: v1alpha1.StorageSpec{Racks: 2, ShardsPerRack: 1},
		Layers:  []v1alpha1.NamedLayer{layer("spine", nodes(2), entries(300), auto), layer("mid", nodes(2), entries(50)), layer("leaf", bound, entries(100), auto)},
	}
	if _, ok := topotest.New(t, "shop", spec).Sizing(); ok {
		t.Fatal("no budget: sized")
	}
	spec.CacheBudget = &v1alpha1.CacheBudgetSpec{Entries: 900, HysteresisPercent: 5}
	p, ok := topotest.New(t, "shop", spec).Sizing()
	if !ok || p.Interval != layout.DefaultSizingInterval || p.Plan.Budget != 900 || p.Plan.Hysteresis != 0.05 ||
		!slices.Equal(p.Plan.Layers, []string{"spine", "leaf"}) || p.Plan.Start["spine"] != 300 || p.Plan.Start["leaf"] != 100 {
		t.Fatalf("Sizing = %+v, %v", p, ok)
	}
}
