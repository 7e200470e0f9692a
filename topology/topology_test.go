package topology

import (
	"testing"

	"github.com/distcache/distcache/placement/partmap"
)

type addrs struct{}

func (addrs) ShardAddress(r, i int) string             { return "shard" }
func (addrs) MemberAddress(layer string, i int) string { return "node" }

func TestMapSpec(t *testing.T) {
	shape := Shape{Cluster: "shop", Racks: 2, ShardsPerRack: 3, DirectReads: true,
		Layers: []Layer{
			{Name: "spine", Members: 4, VirtualNodes: 8, Seed: 7},
			{Name: "leaf", Members: 2, BoundToRacks: true},
			{Name: "tor", Switch: true},
			{Name: "sw", Switch: true, Members: 1, SwitchAddresses: []string{"198.18.0.9:7000"}},
		}}
	s := shape.MapSpec(addrs{})
	if s.Cluster != "shop" || s.Racks != 2 || s.ShardsPerRack != 3 || !s.DirectReads || s.DirectWrites {
		t.Fatalf("MapSpec = %+v", s)
	}
	want := []partmap.LayerSpec{
		{Name: "spine", Nodes: 4, VirtualNodes: 8, Seed: 7},
		{Name: "leaf", Nodes: 2, BoundToRacks: true},
		{Name: "sw", Nodes: 1, Switch: true},
	}
	if len(s.Layers) != len(want) {
		t.Fatalf("layers = %+v, want %+v (a switch layer without switches is left out)", s.Layers, want)
	}
	for i := range want {
		if s.Layers[i] != want[i] {
			t.Errorf("layer %d = %+v, want %+v", i, s.Layers[i], want[i])
		}
	}
	for _, tc := range []struct {
		layer string
		i     int
		want  string
	}{
		{"sw", 0, "198.18.0.9:7000"},
		{"spine", 1, "node"},
	} {
		if got := s.Addresses.MemberAddress(tc.layer, tc.i); got != tc.want {
			t.Errorf("MemberAddress(%s, %d) = %q, want %q", tc.layer, tc.i, got, tc.want)
		}
	}
	if got := s.Addresses.ShardAddress(0, 0); got != "shard" {
		t.Errorf("ShardAddress = %q, want the addresser's", got)
	}
}

func TestNames(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{ShardName("shop", 1, 2), partmap.ShardName("shop", 1, 2)},
		{RackName("shop", 1), "shop-rack-1"},
		{LayerSetName("shop", "spine"), "shop-spine"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
