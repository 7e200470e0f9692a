package driver

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/distcache/distcache/placement/partmap"
)

// TestLoadWindow checks the loads of a window: deltas per member, ordered
// as the map lists them, a killed member left out, a restarted one counted
// from 0, and the shards' coherence summed.
func TestLoadWindow(t *testing.T) {
	m := &partmap.Map{
		Layers:  []partmap.Layer{{Name: "spine", Members: []partmap.Member{{Name: "s-1"}, {Name: "s-0"}}}},
		Storage: partmap.Storage{Racks: []partmap.Rack{{Name: "r", Shards: []partmap.Shard{{Name: "sh-b"}, {Name: "sh-a"}}}}},
	}
	before := []Work{
		{Name: "s-0", Node: true, Layer: "spine", Units: 100, Capacity: 100},
		{Name: "s-1", Node: true, Layer: "spine", Units: 500, Capacity: 100},
		{Name: "gone", Node: true, Layer: "spine", Units: 7},
		{Name: "sh-a", Units: 1000, Capacity: 200, Coherence: 5},
		{Name: "sh-b", Units: 1000, Capacity: 200, Coherence: 5},
	}
	after := []Work{
		{Name: "sh-a", Units: 1400, Capacity: 200, Coherence: 25},
		{Name: "sh-b", Units: 1200, Capacity: 200, Coherence: 10},
		{Name: "extra", Units: 10},
		{Name: "s-0", Node: true, Layer: "spine", Units: 300, Capacity: 100},
		{Name: "s-1", Node: true, Layer: "spine", Units: 50, Capacity: 100}, // restarted
	}
	nodes, shards, coherence := loadWindow(before, after, 2*time.Second, m)
	wantNodes := []Load{
		{Name: "s-1", Layer: "spine", Units: 50, UnitsPerSecond: 25, Capacity: 100, Utilization: 0.25},
		{Name: "s-0", Layer: "spine", Units: 200, UnitsPerSecond: 100, Capacity: 100, Utilization: 1},
	}
	wantShards := []Load{
		{Name: "sh-b", Units: 200, UnitsPerSecond: 100, Capacity: 200, Utilization: 0.5},
		{Name: "sh-a", Units: 400, UnitsPerSecond: 200, Capacity: 200, Utilization: 1},
		{Name: "extra", Units: 10, UnitsPerSecond: 5},
	}
	if !slices.Equal(nodes, wantNodes) || !slices.Equal(shards, wantShards) || coherence != 25 {
		t.Fatalf("nodes %+v\nshards %+v\ncoherence %d", nodes, shards, coherence)
	}
	if name, u := busiest(nodes, shards); name != "s-0" || u != 1 {
		t.Errorf("busiest %s at %v, want s-0 at 1 (the first of the ties)", name, u)
	}
}

func TestImbalance(t *testing.T) {
	tests := []struct {
		name  string
		loads []float64
		want  float64
	}{
		{"none", nil, 0},
		{"idle", []float64{0, 0}, 0},
		{"even", []float64{3, 3, 3}, 1},
		{"one hot of four", []float64{10, 2, 2, 2}, 2.5},
	}
	for _, tt := range tests {
		var ls []Load
		for _, u := range tt.loads {
			ls = append(ls, Load{UnitsPerSecond: u})
		}
		if got := imbalance(ls); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("%s: imbalance %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestCapacities(t *testing.T) {
	tests := []struct {
		name     string
		work     []Work
		sum, top float64
		emulated bool
	}{
		{name: "unlimited", work: []Work{{Name: "a"}, {Name: "n", Node: true}}},
		{name: "only nodes limited", work: []Work{{Name: "a"}, {Name: "n", Node: true, Capacity: 5}}, emulated: true},
		{name: "shards", work: []Work{{Name: "a", Capacity: 2}, {Name: "b", Capacity: 3}}, sum: 5, top: 3, emulated: true},
	}
	for _, tt := range tests {
		sum, top, emulated := capacities(tt.work)
		if sum != tt.sum || top != tt.top || emulated != tt.emulated {
			t.Errorf("%s: capacities %v, %v, %v; want %v, %v, %v", tt.name, sum, top, emulated, tt.sum, tt.top, tt.emulated)
		}
	}
}

func TestOpBound(t *testing.T) {
	tests := []struct {
		rate float64
		d    time.Duration
		want uint64
	}{
		{100, time.Second, 100},
		{100, 1500 * time.Microsecond, 1},
		{0.5, time.Second, 1},
		{1000, 2500 * time.Millisecond, 2500},
		{math.Inf(1), time.Second, math.MaxInt64},
	}
	for _, tt := range tests {
		if got := opBound(tt.rate, tt.d); got != tt.want {
			t.Errorf("opBound(%v, %v) = %d, want %d", tt.rate, tt.d, got, tt.want)
		}
	}
}
