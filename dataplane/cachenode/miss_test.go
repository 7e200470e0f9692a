package cachenode

import (
	"testing"

	"github.com/distcache/distcache/dataplane/wire"
)

func TestConcurrentMissesCoalesce(t *testing.T) {
	const clients = 16
	h := newHarness(t, withStub(holding(wire.OpGet), withValue("k", "v"), withCounter(3)))
	replies := make([]<-chan wire.Message, clients)
	for i := range replies {
		replies[i] = h.getAsync("k")
	}
	held := h.shim.nextHeld(h.ctx, t)
	eventually(t, "every GET waiting on the flight", func() bool {
		return h.node.Stats().Coalesced == clients-1
	})
	held.release()
	for i, ch := range replies {
		rep := <-ch
		if rep.Status != wire.StatusOK || string(rep.Value) != "v" || rep.ValueVersion != 3 || rep.Has(wire.FlagHit) {
			t.Errorf("client %d: %s %q v%d flags %#x, want OK \"v\" v3 without FlagHit",
				i, rep.Status, rep.Value, rep.ValueVersion, rep.Flags)
		}
	}
	if n := h.shim.count(wire.OpGet); n != 1 {
		t.Errorf("shim saw %d GETs, want 1", n)
	}
	if s := h.node.Stats(); s.Misses != clients || s.Coalesced != clients-1 {
		t.Errorf("stats %+v, want %d misses, %d coalesced", s, clients, clients-1)
	}
}

// TestInvalidateSealsFlight runs without parking (park_test.go), so that
// every reader during the write starts a backend read of its own.
func TestInvalidateSealsFlight(t *testing.T) {
	h := newHarness(t, withConfig(func(c *Config) { c.ParkTimeout = -1 }), withStub(holding(wire.OpGet)))
	before := h.getAsync("k")
	first := h.shim.nextHeld(h.ctx, t)

	// A write's invalidation arrives while the read is pending: readers
	// that come after it must not share the older read.
	h.invalidate("k", 10)
	after := h.getAsync("k")
	second := h.shim.nextHeld(h.ctx, t)
	// While the write is pending (no phase 2 yet) its Redis write may come
	// after the second read, and the write may be acknowledged before a
	// later reader arrives: that reader must not share the second read.
	// This is the stale read the end-to-end linearizability test found.
	during := h.getAsync("k")
	third := h.shim.nextHeld(h.ctx, t)

	first.reply(5, "old")
	second.reply(5, "old")
	third.reply(10, "new")
	if rep := <-before; string(rep.Value) != "old" {
		t.Errorf("GET before the invalidation: %q, want the older read", rep.Value)
	}
	if rep := <-after; string(rep.Value) != "old" {
		t.Errorf("GET after the invalidation: %q, want its own (older) read", rep.Value)
	}
	if rep := <-during; string(rep.Value) != "new" || rep.ValueVersion != 10 {
		t.Errorf("GET during the pending write: %q v%d, want its own read \"new\" v10", rep.Value, rep.ValueVersion)
	}
	if n, c := h.shim.count(wire.OpGet), h.node.Stats().Coalesced; n != 3 || c != 0 {
		t.Errorf("shim saw %d GETs with %d coalesced, want 3 and none", n, c)
	}
}

func TestCoalescingResumesAfterPhaseTwo(t *testing.T) {
	for _, status := range []wire.Status{wire.StatusOK, wire.StatusNotFound, wire.StatusUnavailable} {
		t.Run(status.String(), func(t *testing.T) {
			h := newHarness(t, withStub(holding(wire.OpGet)))
			h.invalidate("k", 10)
			h.updateStatus("k", 10, status)
			first := h.getAsync("k")
			held := h.shim.nextHeld(h.ctx, t)
			second := h.getAsync("k")
			eventually(t, "the second GET joining the flight", func() bool { return h.node.Stats().Coalesced == 1 })
			held.reply(10, "new")
			for _, ch := range []<-chan wire.Message{first, second} {
				if rep := <-ch; string(rep.Value) != "new" {
					t.Errorf("GET: %q, want \"new\"", rep.Value)
				}
			}
		})
	}
}
