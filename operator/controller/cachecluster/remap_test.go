package cachecluster

import (
	"slices"
	"testing"

	"github.com/distcache/distcache/placement/partmap"
)

// TestPlacementChanges lists what a new map version changes in who holds
// or serves keys, and nothing for changes that move no key.
func TestPlacementChanges(t *testing.T) {
	base := func() *partmap.Map {
		return &partmap.Map{Version: 1, Layers: []partmap.Layer{
			{Name: "spine", Seed: 1, VirtualNodes: 16, Members: []partmap.Member{
				{Name: "a", State: partmap.Active, Address: "192.0.2.1:7100"}, {Name: "b", State: partmap.Active}}},
		}, Storage: partmap.Storage{Seed: 9, Racks: []partmap.Rack{{Name: "r0", Shards: []partmap.Shard{{Name: "s0"}}}}}}
	}
	tests := []struct {
		name   string
		change func(*partmap.Map)
		want   []string
	}{
		{"nothing", func(*partmap.Map) {}, nil},
		{"an address", func(m *partmap.Map) { m.Layers[0].Members[0].Address = "192.0.2.9:7100" }, nil},
		{"the cache budget's entries", func(m *partmap.Map) { m.Layers[0].Entries = 500 }, nil},
		{"a member fenced", func(m *partmap.Map) { m.Layers[0].Members[1].State = partmap.Fenced }, []string{"b Active to Fenced"}},
		{"a member added", func(m *partmap.Map) {
			m.Layers[0].Members = append(m.Layers[0].Members, partmap.Member{Name: "c", State: partmap.Active})
		}, []string{"c added (Active)"}},
		{"a member removed", func(m *partmap.Map) { m.Layers[0].Members = m.Layers[0].Members[:1] }, []string{"b removed"}},
		{"a layer added and one removed", func(m *partmap.Map) { m.Layers[0].Name = "leaf" },
			[]string{"layer leaf added with 2 members", "layer spine removed"}},
		{"the ring's virtual nodes", func(m *partmap.Map) { m.Layers[0].VirtualNodes = 32 }, []string{"layer spine: ring changed"}},
		{"copies decided", func(m *partmap.Map) {
			m.Copies = []partmap.KeyCopies{{Key: []byte("hot"), Members: []string{"a", "b"}}}
		},
			[]string{"copies of hot keys: 1 keys decided, 0 before"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			next := base()
			tc.change(next)
			if got := placementChanges(base(), next); !slices.Equal(got, tc.want) {
				t.Fatalf("changes %q, want %q", got, tc.want)
			}
		})
	}
}
