package e2e

import (
	"bytes"
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/dataplane/cachenode"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/fabric/cacheswitch"
	"github.com/distcache/distcache/hotkey"
	"github.com/distcache/distcache/internal/testing/clustertest"
	"github.com/distcache/distcache/internal/testing/switchtest"
	"github.com/distcache/distcache/placement/partmap"
)

// BenchmarkHitSwitchVersusNode measures a cache hit over loopback UDP at
// a software switch (the spine) and at a cache node (the leaf) of the same
// cluster, in the same run: one key cached at both, GETs sent straight to
// the switch's read port and to the node, from parallel goroutines
// sharing one client endpoint.
func BenchmarkHitSwitchVersusNode(b *testing.B) {
	c := clustertest.Start(b, clustertest.Config{
		Name: "bench", Racks: 1, ShardsPerRack: 1, Spine: 1, SwitchSpine: true,
		Switch: switchtest.Config{Interval: 50 * time.Millisecond, Controller: func(c *cacheswitch.Config) { c.HotThreshold = 2 }},
		Node: func(c *cachenode.Config) {
			c.Capacity, c.Interval = 32, 20*time.Millisecond
			c.Detector = hotkey.Config{Threshold: 2, SketchWidth: 1024, BloomBits: 4096}
		},
	})
	cl := c.NewClient(client.Config{})
	value := bytes.Repeat([]byte("v"), 64)
	ctx := context.Background()
	if err := cl.Put(ctx, "hot", value); err != nil {
		b.Fatal(err)
	}
	ep, err := transport.Listen(transport.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	ep.Start(nil)
	b.Cleanup(func() { ep.Close() })
	p := c.Placement()
	m := p.Map()
	sw, _ := netip.ParseAddrPort(m.Layers[0].Members[0].Address)
	targets := []struct {
		name string
		addr netip.AddrPort
	}{
		{"software-switch", netip.AddrPortFrom(sw.Addr(), partmap.SwitchReadPort(sw.Port(), p.ShardIndex("hot")))},
		{"cache-node", netip.MustParseAddrPort(m.Layers[1].Members[0].Address)},
	}
	get := func(addr netip.AddrPort) (wire.Message, error) {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return ep.Call(cctx, addr, &wire.Message{Header: wire.Header{Op: wire.OpGet}, Key: []byte("hot")})
	}
	// Read the key until both cache it (bounded).
	for _, tg := range targets {
		deadline := time.Now().Add(20 * time.Second)
		for {
			r, err := get(tg.addr)
			if err == nil && r.Has(wire.FlagHit) {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%s never served the key from its cache: %v", tg.name, err)
			}
		}
	}
	for _, tg := range targets {
		b.Run(tg.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					r, err := get(tg.addr)
					if err != nil || !r.Has(wire.FlagHit) {
						b.Errorf("%s: %v, hit %v", tg.name, err, r.Has(wire.FlagHit))
						return
					}
				}
			})
		})
	}
}
