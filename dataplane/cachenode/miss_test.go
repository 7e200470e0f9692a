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

func TestInvalidateSealsFlight(t *testing.T) {
	h := newHarness(t, withStub(holding(wire.OpGet)))
	before := h.getAsync("k")
	first := h.shim.nextHeld(h.ctx, t)

	// A write's invalidation arrives while the read is pending: readers
	// that come after it must not share the older read.
	h.invalidate("k", 10)
	after := h.getAsync("k")
	second := h.shim.nextHeld(h.ctx, t)
	afterToo := h.getAsync("k") // joins the new flight
	eventually(t, "the third GET joining the second flight", func() bool { return h.node.Stats().Coalesced == 1 })

	first.reply(5, "old")
	second.reply(10, "new")
	if rep := <-before; string(rep.Value) != "old" {
		t.Errorf("GET before the invalidation: %q, want the older read", rep.Value)
	}
	for _, ch := range []<-chan wire.Message{after, afterToo} {
		if rep := <-ch; string(rep.Value) != "new" || rep.ValueVersion != 10 {
			t.Errorf("GET after the invalidation: %q v%d, want \"new\" v10", rep.Value, rep.ValueVersion)
		}
	}
	if n := h.shim.count(wire.OpGet); n != 2 {
		t.Errorf("shim saw %d GETs, want 2", n)
	}
}
