package client

import (
	"testing"
)

// TestReadsStayInTheClientsZone checks zone-aware choice: with the two
// layers' nodes in zones a and b, a client in zone b (named, or learned
// from its host) reads from the zone-b node while loads are even, and from
// the zone-a node once the zone-b node is loaded more than the margin
// allows, counting those reads as cross-zone.
func TestReadsStayInTheClientsZone(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  clientOpt
	}{
		{"zone named", func(c *Config) { c.Zone = "zone-b" }},
		{"zone of the host", func(c *Config) { c.Host = "host-b" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := newCluster(t)
			cl.store("k", "v")
			m := cl.m.Clone()
			m.Layers[0].Members[0].Zone, m.Layers[0].Members[0].Host = "zone-a", "host-a"
			m.Layers[1].Members[0].Zone, m.Layers[1].Members[0].Host = "zone-b", "host-b"
			cl.m, cl.p = m, compile(t, m)
			for _, n := range []*fakeNode{cl.nodes[0][0], cl.nodes[1][0]} {
				n.set(nodeLoad(100))
			}
			c := newTestClient(t, cl.p, tc.opt)
			warmUp(t, c, cl, "k") // both loads known
			crossBefore, atABefore := c.Stats().CrossZoneReads, cl.nodes[0][0].requests()
			for range 20 {
				if _, err := c.Get(testCtx(t), "k"); err != nil {
					t.Fatalf("Get: %v", err)
				}
			}
			cross, atA := c.Stats().CrossZoneReads-crossBefore, cl.nodes[0][0].requests()-atABefore
			if cross != 0 || atA != 0 {
				t.Fatalf("even loads: %d cross-zone reads, %d at the zone-a node; want every read in zone b", cross, atA)
			}
			crossBefore = c.Stats().CrossZoneReads
			cl.nodes[1][0].set(nodeLoad(151)) // more than 1.5 times zone a's
			for range 20 {
				if _, err := c.Get(testCtx(t), "k"); err != nil {
					t.Fatalf("Get: %v", err)
				}
			}
			if cross := c.Stats().CrossZoneReads - crossBefore; cross < 19 {
				t.Fatalf("zone b loaded beyond the margin: %d cross-zone reads of 20, want the reads to move to zone a", cross)
			}
		})
	}
}
