package cachenode

import (
	"strings"
	"sync"
	"testing"

	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/placement/partmap"
)

// cached is what Node.Cached returns.
type cached struct {
	value   string
	version uint64
	valid   bool
	ok      bool
}

func (h *harness) cached(key string) cached {
	v, ver, valid, ok := h.node.Cached(key)
	return cached{string(v), ver, valid, ok}
}

// coherenceStep is one action of a coherence scenario on key "k".
type coherenceStep func(h *harness, s *scenario)

// scenario carries an insertion whose FETCH the stub holds.
type scenario struct {
	fetch *heldRequest
	done  <-chan InsertResult
}

func cacheK(value string, c uint64) coherenceStep {
	return func(h *harness, _ *scenario) { h.cache("k", value, c) }
}

func invalidateK(v uint64) coherenceStep {
	return func(h *harness, _ *scenario) { h.invalidate("k", v) }
}

func updateK(v uint64, value string) coherenceStep {
	return func(h *harness, _ *scenario) { h.update("k", v, value) }
}

// holdFill starts an insertion of "k" and holds its FETCH.
func holdFill() coherenceStep {
	return func(h *harness, s *scenario) { s.fetch, s.done = h.pendingFill("k") }
}

// fillK answers the held FETCH with value at counter c and waits for the
// insertion to end with want.
func fillK(c uint64, value string, want InsertResult) coherenceStep {
	return func(h *harness, s *scenario) {
		s.fetch.reply(c, value)
		if r := h.wait(s.done); r != want {
			h.t.Fatalf("InsertHot: %+v, want %+v", r, want)
		}
	}
}

// fillMissing answers the held FETCH "not in storage" at counter c.
func fillMissing(c uint64, want InsertResult) coherenceStep {
	return func(h *harness, s *scenario) {
		s.fetch.notFoundAt(c)
		if r := h.wait(s.done); r != want {
			h.t.Fatalf("InsertHot: %+v, want %+v", r, want)
		}
	}
}

func fillNotFound() coherenceStep {
	return func(h *harness, s *scenario) {
		s.fetch.notFound()
		if r := h.wait(s.done); r != (InsertResult{Failed: 1}) {
			h.t.Fatalf("InsertHot: %+v, want 1 failed", r)
		}
	}
}

// refresh sets the stub's value of "k" (deleted when value is "") and
// counter, then runs an insertion interval, which fetches invalid entries.
func refresh(value string, c uint64, want InsertResult) coherenceStep {
	return func(h *harness, _ *scenario) {
		h.shim.setHold(wire.OpFetch, false)
		if value == "" {
			h.shim.deleteValue("k")
		} else {
			h.shim.setValue("k", value)
		}
		h.shim.setCounter(c)
		if r := h.node.InsertHot(h.ctx); r != want {
			h.t.Fatalf("InsertHot: %+v, want %+v", r, want)
		}
	}
}

func TestCoherence(t *testing.T) {
	tests := []struct {
		name  string
		steps []coherenceStep
		want  cached
	}{
		{
			name:  "invalidate then update of the same version",
			steps: []coherenceStep{cacheK("a", 10), invalidateK(20), updateK(20, "b")},
			want:  cached{"b", 20, true, true},
		},
		{
			name:  "update of another version ignored",
			steps: []coherenceStep{cacheK("a", 10), invalidateK(20), updateK(19, "x"), updateK(21, "y")},
			want:  cached{"", 20, false, true},
		},
		{
			name:  "update without its invalidation ignored",
			steps: []coherenceStep{cacheK("a", 10), updateK(11, "x")},
			want:  cached{"a", 10, true, true},
		},
		{
			name:  "invalidation keeps the larger version",
			steps: []coherenceStep{cacheK("a", 10), invalidateK(30), invalidateK(20), updateK(20, "x")},
			want:  cached{"", 30, false, true},
		},
		{
			name:  "invalidation of an uncached key acknowledged",
			steps: []coherenceStep{invalidateK(5), updateK(5, "x")},
			want:  cached{},
		},
		{
			name:  "fill older than the invalidation ignored",
			steps: []coherenceStep{holdFill(), invalidateK(50), fillK(40, "old", InsertResult{Stale: 1})},
			want:  cached{"", 50, false, true},
		},
		{
			name:  "fill newer than the invalidation applied",
			steps: []coherenceStep{holdFill(), invalidateK(50), fillK(60, "new", InsertResult{Inserted: 1})},
			want:  cached{"new", 60, true, true},
		},
		{
			name: "update of the placeholder's invalidation wins over an older fill",
			steps: []coherenceStep{holdFill(), invalidateK(50), updateK(50, "w"),
				fillK(40, "old", InsertResult{Stale: 1})},
			want: cached{"w", 50, true, true},
		},
		{
			name:  "fill not found removes the placeholder",
			steps: []coherenceStep{holdFill(), fillNotFound()},
			want:  cached{},
		},
		{
			name: "invalid entry fetched again next interval",
			steps: []coherenceStep{cacheK("a", 10), invalidateK(20),
				refresh("c", 25, InsertResult{Refreshed: 1})},
			want: cached{"c", 25, true, true},
		},
		{
			name: "refresh older than the invalidation ignored",
			steps: []coherenceStep{cacheK("a", 10), invalidateK(20),
				refresh("c", 15, InsertResult{Stale: 1})},
			want: cached{"", 20, false, true},
		},
		{
			name: "deleted key cached as missing by the refresh",
			steps: []coherenceStep{cacheK("a", 10), invalidateK(20),
				refresh("", 20, InsertResult{Refreshed: 1})},
			want: cached{"", 20, true, true},
		},
		{
			name:  "key not in storage cached as missing",
			steps: []coherenceStep{holdFill(), fillMissing(30, InsertResult{Inserted: 1})},
			want:  cached{"", 30, true, true},
		},
		{
			name:  "write invalidates a negative entry",
			steps: []coherenceStep{holdFill(), fillMissing(30, InsertResult{Inserted: 1}), invalidateK(40)},
			want:  cached{"", 40, false, true},
		},
		{
			name: "update fills the key of a negative entry",
			steps: []coherenceStep{holdFill(), fillMissing(30, InsertResult{Inserted: 1}), invalidateK(40),
				updateK(40, "w")},
			want: cached{"w", 40, true, true},
		},
		{
			name:  "missing at an older counter than the placeholder's invalidation",
			steps: []coherenceStep{holdFill(), invalidateK(50), fillMissing(40, InsertResult{Stale: 1})},
			want:  cached{"", 50, false, true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			var s scenario
			for _, step := range tt.steps {
				step(h, &s)
			}
			if got := h.cached("k"); got != tt.want {
				t.Fatalf("Cached(k) = %+v, want %+v", got, tt.want)
			}
			rep := h.get("k")
			if hit := rep.Has(wire.FlagHit); hit != tt.want.valid || hit && string(rep.Value) != tt.want.value {
				t.Errorf("GET k: hit=%v %q, want hit=%v %q", hit, rep.Value, tt.want.valid, tt.want.value)
			}
			// A valid copy without a value is a negative entry: not found.
			if wantMissing := tt.want.valid && tt.want.value == ""; rep.Has(wire.FlagHit) && (rep.Status == wire.StatusNotFound) != wantMissing {
				t.Errorf("GET k: hit with status %v, want not found %v", rep.Status, wantMissing)
			}
		})
	}
}

// TestLateFillOfReplacedPlaceholder checks that the reply to a FETCH for a
// placeholder that was dropped, and replaced by a new placeholder of the
// same key, never fills the new one.
func TestLateFillOfReplacedPlaceholder(t *testing.T) {
	h := newHarness(t)
	oldFetch, oldDone := h.pendingFill("k")

	// The node fails and comes back: the placeholder is dropped, and a new
	// insertion of the key adds a new one with its own FETCH.
	h.setState(0, partmap.Failed)
	h.setState(0, partmap.Active)
	newFetch, newDone := h.pendingFill("k")

	oldFetch.reply(100, "old")
	if r := h.wait(oldDone); r != (InsertResult{Stale: 1}) {
		t.Fatalf("first InsertHot: %+v, want its fill stale", r)
	}
	if got := h.cached("k"); got != (cached{"", 0, false, true}) {
		t.Fatalf("after the late fill: %+v, want the new placeholder untouched", got)
	}
	newFetch.reply(7, "new")
	if r := h.wait(newDone); r != (InsertResult{Inserted: 1}) {
		t.Fatalf("second InsertHot: %+v, want 1 inserted", r)
	}
	if got := h.cached("k"); got != (cached{"new", 7, true, true}) {
		t.Fatalf("after the fill: %+v, want the new value", got)
	}
	if s := h.node.Stats(); s.FillsIgnored != 1 || s.Fills != 1 {
		t.Errorf("stats %+v, want 1 fill applied and 1 ignored", s)
	}
}

// TestConcurrentAccounting runs reads, writes' two phases, insertion
// intervals and map changes concurrently (a bounded number of each) and
// checks that the item and byte totals match the store's contents.
func TestConcurrentAccounting(t *testing.T) {
	h := newHarness(t)
	keys := []string{"k0", "k1", "k2", "k3", "k4", "k5"}
	for _, k := range keys {
		h.shim.setValue(k, "initial-"+k)
	}
	// The goroutines report with t.Error: t.Fatal belongs to the test's
	// own goroutine.
	call := func(m *wire.Message) {
		if _, err := h.client.Call(h.ctx, h.node.Addr(), m); err != nil {
			t.Error(err)
		}
	}
	var wg sync.WaitGroup
	for r := range 3 {
		wg.Go(func() {
			for i := range 60 {
				call(&wire.Message{Header: wire.Header{Op: wire.OpGet}, Key: []byte(keys[(i+r)%len(keys)])})
			}
		})
	}
	wg.Go(func() {
		for v := uint64(1); v <= 60; v++ {
			k := []byte(keys[int(v)%len(keys)])
			call(&wire.Message{Header: wire.Header{Op: wire.OpInvalidate, ValueVersion: v}, Key: k})
			call(&wire.Message{Header: wire.Header{Op: wire.OpUpdate, ValueVersion: v}, Key: k,
				Value: []byte(strings.Repeat("u", int(v)))})
		}
	})
	wg.Go(func() {
		for range 20 {
			h.node.InsertHot(h.ctx)
		}
	})
	m := h.m
	wg.Go(func() {
		for i := range 6 {
			state := partmap.Failed
			if i%2 == 1 {
				state = partmap.Active
			}
			next, _, err := m.WithState(m.Layers[0].Members[0].Name, state)
			if err != nil {
				t.Error(err)
				return
			}
			p, err := partmap.Compile(next)
			if err != nil {
				t.Error(err)
				return
			}
			if err := h.node.SetMap(p); err != nil {
				t.Error(err)
			}
			m = next
		}
	})
	wg.Wait()

	var items, bytes int64
	for i := range h.node.store.shards {
		sh := &h.node.store.shards[i]
		sh.mu.RLock()
		for _, e := range sh.m {
			items++
			bytes += int64(len(e.value))
			if e.fetching {
				t.Errorf("entry left fetching after every insertion ended")
			}
		}
		sh.mu.RUnlock()
	}
	if s := h.node.Stats(); s.Items != items || s.Bytes != bytes {
		t.Fatalf("Items %d Bytes %d, store holds %d entries of %d bytes", s.Items, s.Bytes, items, bytes)
	}
}
