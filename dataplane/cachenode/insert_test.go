package cachenode

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/hotkey"
	"github.com/distcache/distcache/placement/partmap"
)

func TestInsertHot(t *testing.T) {
	tests := []struct {
		name string
		opts []harnessOption
		// misses per key before the interval, in order
		misses []keyMisses
		want   InsertResult
		// wantCached lists the keys cached (valid) afterwards; every other
		// key of misses must be absent.
		wantCached []string
	}{
		{
			name:       "hot key inserted",
			misses:     []keyMisses{{"a", testThreshold}},
			want:       InsertResult{Inserted: 1},
			wantCached: []string{"a"},
		},
		{
			name:   "key below the threshold not inserted",
			misses: []keyMisses{{"a", testThreshold - 1}},
		},
		{
			name:       "capacity 1 keeps the hotter of two keys",
			opts:       []harnessOption{withConfig(func(c *Config) { c.Capacity = 1 })},
			misses:     []keyMisses{{"a", testThreshold}, {"b", testThreshold + 3}},
			want:       InsertResult{Inserted: 1},
			wantCached: []string{"b"},
		},
		{
			name:   "value over CapacityBytes refused",
			opts:   []harnessOption{withConfig(func(c *Config) { c.CapacityBytes = 4 })},
			misses: []keyMisses{{"big", testThreshold}},
			want:   InsertResult{Failed: 1},
		},
		{
			name:       "values fill CapacityBytes exactly",
			opts:       []harnessOption{withConfig(func(c *Config) { c.CapacityBytes = int64(len("v-a") + len("v-bb")) })},
			misses:     []keyMisses{{"a", testThreshold}, {"bb", testThreshold}},
			want:       InsertResult{Inserted: 2},
			wantCached: []string{"a", "bb"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.opts...)
			for _, km := range tt.misses {
				h.shim.setValue(km.key, "v-"+km.key)
				h.heat(km.key, km.n)
			}
			if r := h.node.InsertHot(h.ctx); r != tt.want {
				t.Fatalf("InsertHot: %+v, want %+v", r, tt.want)
			}
			for _, km := range tt.misses {
				want := cached{}
				if contains(tt.wantCached, km.key) {
					want = cached{"v-" + km.key, 0, true, true}
				}
				if got := h.cached(km.key); got != want {
					t.Errorf("Cached(%s) = %+v, want %+v", km.key, got, want)
				}
				rep := h.get(km.key)
				if rep.Has(wire.FlagHit) != want.valid || string(rep.Value) != "v-"+km.key {
					t.Errorf("GET %s: hit=%v %q, want hit=%v", km.key, rep.Has(wire.FlagHit), rep.Value, want.valid)
				}
			}
			if s := h.node.Stats(); s.Items != int64(len(tt.wantCached)) {
				t.Errorf("Items = %d, want %d", s.Items, len(tt.wantCached))
			}
		})
	}
}

type keyMisses struct {
	key string
	n   int
}

func contains(keys []string, k string) bool {
	for _, x := range keys {
		if x == k {
			return true
		}
	}
	return false
}

func TestHotterKeyReplacesColdEntry(t *testing.T) {
	h := newHarness(t, withConfig(func(c *Config) { c.Capacity = 1 }))
	h.cache("a", "va", 1)
	// Next interval: a gets one hit, b many misses.
	if rep := h.get("a"); !rep.Has(wire.FlagHit) {
		t.Fatal("a not a hit")
	}
	h.shim.setValue("b", "vb")
	h.heat("b", testThreshold+2)
	if r := h.node.InsertHot(h.ctx); r != (InsertResult{Inserted: 1, Evicted: 1}) {
		t.Fatalf("InsertHot: %+v, want b inserted and a evicted", r)
	}
	if got := h.cached("a"); got.ok {
		t.Errorf("a still cached: %+v", got)
	}
	if got := h.cached("b"); !got.valid || got.value != "vb" {
		t.Errorf("b: %+v, want cached", got)
	}
	if s := h.node.Stats(); s.Evictions != 1 || s.Items != 1 {
		t.Errorf("stats %+v, want 1 eviction and 1 item", s)
	}
}

func TestKeysOfOtherMembersNotInserted(t *testing.T) {
	h := newHarness(t, withMembers(2))
	p, err := partmap.Compile(h.m)
	if err != nil {
		t.Fatal(err)
	}
	other := keysOwnedBy(p, 1, 1)[0]
	mine := keysOwnedBy(p, 0, 1)[0]
	for _, k := range []string{other, mine} {
		h.shim.setValue(k, "v")
		h.heat(k, testThreshold+1)
	}
	if r := h.node.InsertHot(h.ctx); r != (InsertResult{Inserted: 1}) {
		t.Fatalf("InsertHot: %+v, want only the owned key", r)
	}
	if got := h.cached(other); got.ok {
		t.Errorf("key of member 1 cached: %+v", got)
	}
}

func TestBackgroundInsertion(t *testing.T) {
	h := newHarness(t, withStub(withValue("k", strings.Repeat("x", 3000))),
		withConfig(func(c *Config) {
			c.Interval = 5 * time.Millisecond
			c.Detector.Threshold = 1 // one miss in an interval makes the key hot
		}))
	// Keep reading the key until an interval of the loop has inserted it;
	// the value needs several datagrams, so the hit reply is fragmented.
	eventually(t, "the background loop inserting the key", func() bool {
		rep := h.get("k")
		if rep.Status != wire.StatusOK || len(rep.Value) != 3000 {
			t.Fatalf("GET: %s, %d bytes, want a 3000-byte value", rep.Status, len(rep.Value))
		}
		return rep.Has(wire.FlagHit)
	})
	if s := h.node.Stats(); s.Fills < 1 || s.Inserts < 1 {
		t.Errorf("stats %+v, want an insertion and a fill", s)
	}
}

func TestMapChangeBringsTheNextInsertionIntervalForward(t *testing.T) {
	tests := []struct {
		name   string
		change func(h *harness)
		want   bool
	}{
		{name: "first map only", change: func(*harness) {}},
		{name: "newer version", want: true, change: func(h *harness) {
			next := h.m.Clone()
			next.Version++
			h.setMap(next)
		}},
		{name: "another member failed: its keys may come here", want: true, change: func(h *harness) {
			h.setState(1, partmap.Failed)
		}},
		{name: "this node failed", change: func(h *harness) { h.setState(0, partmap.Failed) }},
		{name: "this node restored", want: true, change: func(h *harness) {
			h.setState(0, partmap.Failed)
			h.setState(0, partmap.Active)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, withMembers(2)) // Interval -1: nothing drains remapped
			tt.change(h)
			if got := len(h.node.remapped) == 1; got != tt.want {
				t.Errorf("next interval brought forward: %v, want %v", got, tt.want)
			}
		})
	}
}

func TestEarlyIntervalIsAQuarterToHalfAnInterval(t *testing.T) {
	for range 100 {
		if d := earlyInterval(time.Second); d < 250*time.Millisecond || d > 500*time.Millisecond {
			t.Fatalf("earlyInterval(1s) = %v, want within [250ms, 500ms]", d)
		}
	}
}

// TestHotKeysReportsTheIntervalsHits: once an interval ends, the node
// reports the hits of each key it caches in that interval, most hit first,
// and nothing for keys it does not cache.
func TestHotKeysReportsTheIntervalsHits(t *testing.T) {
	h := newHarness(t)
	if got := h.node.HotKeys(); len(got.Keys) != 0 {
		t.Fatalf("before any interval: %+v", got)
	}
	h.cache("a", "v-a", 1)
	h.cache("b", "v-b", 2)
	for key, n := range map[string]int{"a": 2, "b": 5} {
		for range n {
			if rep := h.get(key); !rep.Has(wire.FlagHit) {
				t.Fatalf("GET %s: not a hit", key)
			}
		}
	}
	h.heat("cold", 1)
	h.node.InsertHot(h.ctx)
	got := h.node.HotKeys()
	want := []metrics.KeyCount{{Key: []byte("b"), Reads: 5}, {Key: []byte("a"), Reads: 2}}
	if !reflect.DeepEqual(got.Keys, want) || !(got.Interval > 0) {
		t.Fatalf("HotKeys() = %+v, want %+v over a positive interval", got, want)
	}
}

// TestHotKeysReportsTheMostHitOnly: a node caching more keys than
// hotKeysReported reports the most hit of them only.
func TestHotKeysReportsTheMostHitOnly(t *testing.T) {
	h := newHarness(t)
	hits := make([]hotkey.KeyHits, hotKeysReported+500)
	for i := range hits {
		hits[i] = hotkey.KeyHits{Key: "k" + strconv.Itoa(i), Hits: uint64(len(hits) - i)}
	}
	h.node.insertMu.Lock()
	h.node.recordHits(hits)
	h.node.insertMu.Unlock()
	got := h.node.HotKeys().Keys
	if len(got) != hotKeysReported || string(got[0].Key) != "k0" || got[0].Reads != uint64(len(hits)) {
		t.Fatalf("reported %d keys starting with %+v, want the %d most hit from k0", len(got), got[0], hotKeysReported)
	}
}
