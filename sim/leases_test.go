package sim

import (
	"testing"
	"time"
)

// TestLeases checks the lease count against the cache contents: a leaf
// node caches only its own rack's keys, so it holds at most a rack's
// leases; no node holds more leases than it caches keys or than there
// are shards; and the messages follow from the pairs.
func TestLeases(t *testing.T) {
	cfg := Quick(Default())
	cfg.Spines, cfg.Racks, cfg.ServersPerRack, cfg.CachePerNode = 8, 8, 4, 20
	cfg.Keys = 100_000
	l, err := Leases(cfg, time.Second, 3)
	if err != nil {
		t.Fatal(err)
	}
	if l.Nodes != 16 || l.Shards != 32 {
		t.Fatalf("nodes %d, shards %d; want 16 and 32", l.Nodes, l.Shards)
	}
	if l.Pairs == 0 || l.Pairs > l.Nodes*cfg.CachePerNode || l.NodeMaxPairs > min(cfg.CachePerNode, l.Shards) {
		t.Fatalf("pairs %d, most per node %d: more than the nodes cache", l.Pairs, l.NodeMaxPairs)
	}
	if l.ShardMaxPairs > l.Nodes {
		t.Fatalf("a shard grants %d leases to %d nodes", l.ShardMaxPairs, l.Nodes)
	}
	if got, want := l.Total(), 6*float64(l.Pairs); got != want {
		t.Fatalf("Total = %v, want %v (a request and a grant, three times a second, per pair)", got, want)
	}
	m, err := newModel(cfg)
	if err != nil {
		t.Fatal(err)
	}
	leaves := m.hottest(cfg.CachePerNode, func(k int) int32 { return m.leafNode(m.leaf[k]) })
	for v, ranks := range leaves {
		racks := map[int32]bool{}
		for _, k := range ranks {
			racks[m.server[k]/int32(cfg.ServersPerRack)] = true
		}
		if len(racks) > 1 {
			t.Fatalf("leaf node %d caches keys of %d racks", v, len(racks))
		}
	}
	if _, err := Leases(cfg, 0, 3); err == nil {
		t.Fatal("Leases with no length: want an error")
	}
}
