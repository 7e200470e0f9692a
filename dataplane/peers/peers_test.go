package peers_test

import (
	"net/netip"
	"testing"

	"github.com/distcache/distcache/dataplane/peers"
	"github.com/distcache/distcache/placement/partmap"
)

func TestResolveAddr(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" for an error
	}{
		{"127.0.0.1:7000", "127.0.0.1:7000"},
		{"[::ffff:127.0.0.1]:7000", "127.0.0.1:7000"},
		{"localhost:7000", "127.0.0.1:7000"},
		{"[::1]:7000", "[::1]:7000"},
		{"no-port", ""},
		{"127.0.0.1:0", ""},
	}
	for _, tt := range tests {
		got, err := peers.ResolveAddr(tt.in)
		if tt.want == "" {
			if err == nil {
				t.Errorf("ResolveAddr(%q) = %v, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || got != netip.MustParseAddrPort(tt.want) {
			t.Errorf("ResolveAddr(%q) = %v, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

func TestResolveTable(t *testing.T) {
	m, err := partmap.Build(partmap.Spec{Cluster: "t", Racks: 2, ShardsPerRack: 1,
		Layers: []partmap.LayerSpec{{Name: "spine", Nodes: 2}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m.Layers[0].Members[0].Address = "127.0.0.1:7001"
	m.Layers[0].Members[1].Address = "bad"
	m.Storage.Racks[1].Shards[0].Address = "[::ffff:127.0.0.1]:7100"
	tb := peers.Resolve(m, nil)
	for _, c := range []struct {
		got  netip.AddrPort
		want string
	}{
		{tb.Member(0, 0), "127.0.0.1:7001"},
		{tb.Member(0, 1), ""}, // unusable
		{tb.Shard(0, 0), ""},  // none given
		{tb.Shard(1, 0), "127.0.0.1:7100"},
	} {
		if (c.want == "" && c.got.IsValid()) || (c.want != "" && c.got != netip.MustParseAddrPort(c.want)) {
			t.Errorf("got %v, want %q", c.got, c.want)
		}
	}
}
