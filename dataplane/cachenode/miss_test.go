package cachenode

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/internal/testing/wiretest"
	"github.com/distcache/distcache/placement/hashing"
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

// TestMissesOfOneBatchForwardedTogether queues GETs of distinct keys in the
// node's socket before it starts, so that its reader receives them in one
// batch: their backend reads leave for the shim together (one CallMany),
// and every reader gets its own key's value.
func TestMissesOfOneBatchForwardedTogether(t *testing.T) {
	const keys = 8
	var values []stubOption
	for i := range keys {
		values = append(values, withValue(fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i)))
	}
	h := newHarness(t, withoutStart(), withStub(values...),
		withConfig(func(c *Config) { c.Transport.Readers = 1 })) // one reader: one receive batch
	peer := wiretest.NewPeer(t)
	gets := make([]string, keys)
	for i := range gets {
		gets[i] = fmt.Sprintf("k%d", i)
	}
	peer.SendGets(h.node.Addr(), gets...)
	if err := h.node.Start(); err != nil {
		t.Fatal(err)
	}
	for range keys {
		rep := peer.Read(testDeadline)
		if want := fmt.Sprintf("v%d", rep.Seq-1); rep.Status != wire.StatusOK || string(rep.Value) != want || rep.Has(wire.FlagHit) {
			t.Errorf("GET %d: %s %q flags %#x, want OK %q without FlagHit", rep.Seq, rep.Status, rep.Value, rep.Flags, want)
		}
	}
	if s := h.node.Stats(); s.Misses != keys || s.BackendBatches != 1 || s.BackendBatched != keys {
		t.Errorf("stats: %d misses, %d backend batches of %d flights; want %d misses in 1 batch", s.Misses, s.BackendBatches, s.BackendBatched, keys)
	}
	if n := h.shim.count(wire.OpGet); n != keys {
		t.Errorf("shim saw %d GETs, want %d", n, keys)
	}
}

// TestMissForwardedBeforeAHitWaits queues a hit, a miss and a hit in the
// node's socket, with an emulated capacity of one unit now and the next
// in 1,000 s: the second hit waits for its unit, and the miss before it in
// the batch must not wait with it — its backend read leaves first.
func TestMissForwardedBeforeAHitWaits(t *testing.T) {
	h := newHarness(t, withoutStart(), withStub(holding(wire.OpGet)),
		withConfig(func(c *Config) { c.Transport.Readers, c.EmulatedRate = 1, 0.001 }))
	// A valid copy of "hit", put in place without traffic: the node does
	// not serve yet.
	e, _ := h.node.store.addPlaceholder("hit", 0)
	sh := h.node.store.shard("hit")
	sh.mu.Lock()
	e.value, e.version, e.valid, e.fetching = []byte("v"), 1, true, false
	sh.mu.Unlock()
	wiretest.NewPeer(t).SendGets(h.node.Addr(), "hit", "miss", "hit")
	if err := h.node.Start(); err != nil {
		t.Fatal(err)
	}
	held := h.shim.nextHeld(h.ctx, t)
	if string(held.req.Key) != "miss" {
		t.Fatalf("the shim got a GET of %q, want \"miss\"", held.req.Key)
	}
}

// TestFlightJoinRefusesRetransmissions checks that a flight takes each
// reader once, whether it finds duplicates by scanning its waiters or, past
// seenScan of them, in its set.
func TestFlightJoinRefusesRetransmissions(t *testing.T) {
	src := netip.MustParseAddrPort("127.0.0.1:7000")
	other := netip.MustParseAddrPort("127.0.0.1:7001")
	for _, tc := range []struct {
		name    string
		readers int // distinct readers joining before the retransmissions
	}{
		{"one reader", 1},
		{"below the set", seenScan - 1},
		{"at the set", seenScan},
		{"past the set", 3 * seenScan},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFlight([]byte("k"), hashing.Digest{}, nil)
			f.first[0] = waiter{src: src, seq: 0}
			f.waiters = f.first[:]
			for i := 1; i < tc.readers; i++ {
				if !f.join(waiter{src: src, seq: uint64(i)}) {
					t.Fatalf("reader %d refused", i)
				}
			}
			for i := range tc.readers {
				if f.join(waiter{src: src, seq: uint64(i)}) {
					t.Errorf("retransmission of reader %d joined", i)
				}
			}
			if !f.join(waiter{src: other, seq: 0}) {
				t.Error("a reader from another source with a used sequence number was refused")
			}
			if got, want := len(f.waiters), tc.readers+1; got != want {
				t.Errorf("%d waiters, want %d", got, want)
			}
		})
	}
}
