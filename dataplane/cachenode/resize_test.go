package cachenode

import (
	"fmt"
	"testing"
)

// TestMapResizesTheCache: the entries the map gives the node's layer
// replace Config.Capacity at the next insertion interval, without a
// restart: the coldest entries are evicted down to them, and a map without
// them gives the node its own capacity back.
func TestMapResizesTheCache(t *testing.T) {
	h := newHarness(t, withConfig(func(c *Config) { c.Capacity = 4 }))
	keys := []string{"a", "b", "c", "d"}
	for i, k := range keys {
		h.shim.setValue(k, "v-"+k)
		h.heat(k, testThreshold+i) // d hottest
	}
	if r := h.node.InsertHot(h.ctx); r.Inserted != 4 {
		t.Fatalf("InsertHot: %+v, want the 4 keys inserted", r)
	}
	resize := func(entries int) {
		t.Helper()
		next, _, err := h.m.WithEntries(map[string]int{h.m.Layers[0].Name: entries})
		if err != nil {
			t.Fatal(err)
		}
		h.setMap(next)
	}
	resize(2)
	for i, k := range keys { // this interval's hits: d and c the most hit
		for range i + 1 {
			h.get(k)
		}
	}
	if r := h.node.InsertHot(h.ctx); r.Evicted != 2 {
		t.Fatalf("InsertHot after the map gave 2 entries: %+v, want 2 evicted", r)
	}
	if got := fmt.Sprint(h.cached("a").ok, h.cached("b").ok, h.cached("c").valid, h.cached("d").valid); got != "false false true true" {
		t.Fatalf("a, b gone and c, d cached: %s", got)
	}
	if c := h.node.MissRatioCurve().Entries; c != 2 {
		t.Errorf("/mrc reports %d entries, want the map's 2", c)
	}
	resize(0)
	for _, k := range []string{"a", "b"} {
		h.heat(k, testThreshold+10)
	}
	if r := h.node.InsertHot(h.ctx); r.Inserted != 2 || r.Evicted != 0 {
		t.Fatalf("InsertHot with the node's own capacity back: %+v, want a and b inserted, nothing evicted", r)
	}
}
