package cachenode

import (
	"testing"

	"github.com/distcache/distcache/dataplane/wire"
)

// parkReads sends n GETs of key and waits until all of them are parked.
func (h *harness) parkReads(key string, n int) []<-chan wire.Message {
	h.t.Helper()
	before := h.node.Stats().Parked
	out := make([]<-chan wire.Message, n)
	for i := range out {
		out[i] = h.getAsync(key)
	}
	eventually(h.t, "every GET parked", func() bool { return h.node.Stats().Parked == before+uint64(n) })
	return out
}

func TestParkedReadsAnsweredByPhaseTwo(t *testing.T) {
	tests := []struct {
		name      string
		status    wire.Status
		cached    bool // the node holds k, so the UPDATE applies
		want      wire.Status
		wantValue string
		wantVer   uint64
		wantHit   bool
		shimGets  int // GETs that reach the shim (besides caching k)
	}{
		{name: "PUT of an uncached key", status: wire.StatusOK, want: wire.StatusOK, wantValue: "new", wantVer: 10},
		{name: "PUT of a cached key is a hit", status: wire.StatusOK, cached: true,
			want: wire.StatusOK, wantValue: "new", wantVer: 10, wantHit: true},
		{name: "DEL", status: wire.StatusNotFound, want: wire.StatusNotFound, wantVer: 10},
		{name: "failed write: the shim answers", status: wire.StatusUnavailable,
			want: wire.StatusOK, wantValue: "shim", wantVer: 3, shimGets: 1},
	}
	const readers = 8
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, withParkTimeoutsFiredByTest(), withStub(withValue("k", "shim"), withCounter(3)))
			if tt.cached {
				h.cache("k", "old", 3)
			}
			gets := h.shim.count(wire.OpGet)
			h.invalidate("k", 10)
			replies := h.parkReads("k", readers)
			if n := h.shim.count(wire.OpGet) - gets; n != 0 {
				t.Fatalf("shim saw %d GETs while the write was pending, want 0", n)
			}
			work := h.node.Stats().Work
			if tt.status == wire.StatusOK {
				h.update("k", 10, "new")
			} else {
				h.updateStatus("k", 10, tt.status)
			}
			for i, ch := range replies {
				rep := <-ch
				if rep.Status != tt.want || string(rep.Value) != tt.wantValue || rep.ValueVersion != tt.wantVer ||
					rep.Has(wire.FlagHit) != tt.wantHit {
					t.Errorf("reader %d: %s %q v%d hit=%v, want %s %q v%d hit=%v", i, rep.Status, rep.Value,
						rep.ValueVersion, rep.Has(wire.FlagHit), tt.want, tt.wantValue, tt.wantVer, tt.wantHit)
				}
			}
			if n := h.shim.count(wire.OpGet) - gets; n != tt.shimGets {
				t.Errorf("shim saw %d GETs, want %d", n, tt.shimGets)
			}
			s := h.node.Stats()
			wantWork := uint64(0)
			if tt.cached {
				wantWork = 1 + readers // the UPDATE of a held key, and one per hit
			}
			if s.Work-work != wantWork {
				t.Errorf("work units for the UPDATE and its readers: %d, want %d", s.Work-work, wantWork)
			}
			if wantFwd := uint64(tt.shimGets * readers); s.ParkForwarded != wantFwd {
				t.Errorf("ParkForwarded = %d, want %d", s.ParkForwarded, wantFwd)
			}
		})
	}
}

func TestParkedReadWaitsForTheWriteItArrivedUnder(t *testing.T) {
	h := newHarness(t, withParkTimeoutsFiredByTest(), withStub(withValue("k", "shim")))
	h.invalidate("k", 10)
	first := h.parkReads("k", 1)[0]
	// A later write's invalidation: readers arriving now may have been
	// invoked after that write completed, so write 10's value is too old
	// for them.
	h.invalidate("k", 11)
	second := h.parkReads("k", 1)[0]

	h.update("k", 10, "ten")
	if rep := <-first; string(rep.Value) != "ten" || rep.ValueVersion != 10 {
		t.Errorf("reader parked under write 10: %q v%d, want \"ten\" v10", rep.Value, rep.ValueVersion)
	}
	if n := h.node.parkedOn("k"); n != 1 {
		t.Fatalf("%d readers still parked after write 10's phase 2, want 1 (parked under write 11)", n)
	}
	h.update("k", 11, "eleven")
	if rep := <-second; string(rep.Value) != "eleven" || rep.ValueVersion != 11 {
		t.Errorf("reader parked under write 11: %q v%d, want \"eleven\" v11", rep.Value, rep.ValueVersion)
	}
	if n := h.shim.count(wire.OpGet); n != 0 {
		t.Errorf("shim saw %d GETs, want 0", n)
	}
}

func TestParkedReadsForwardedWhenPhaseTwoIsLate(t *testing.T) {
	h := newHarness(t, withParkTimeoutsFiredByTest(),
		withStub(holding(wire.OpGet), withValue("k", "shim"), withCounter(3)))
	h.invalidate("k", 10)
	replies := h.parkReads("k", 4)
	if n := h.timers.fire(); n != 1 {
		t.Fatalf("%d park timeouts started for one key, want 1", n)
	}
	held := h.shim.nextHeld(h.ctx, t) // one backend read for every parked reader
	held.release()
	for i, ch := range replies {
		if rep := <-ch; rep.Status != wire.StatusOK || string(rep.Value) != "shim" || rep.ValueVersion != 3 {
			t.Errorf("reader %d: %s %q v%d, want the shim's \"shim\" v3", i, rep.Status, rep.Value, rep.ValueVersion)
		}
	}
	if n, s := h.shim.count(wire.OpGet), h.node.Stats(); n != 1 || s.ParkForwarded != 4 {
		t.Errorf("shim saw %d GETs, %d parked reads forwarded; want 1 and 4", n, s.ParkForwarded)
	}
	// The late phase 2 finds nobody parked and changes nothing else.
	h.update("k", 10, "new")
	if n := h.node.parkedOn("k"); n != 0 {
		t.Errorf("%d readers parked after the phase 2, want 0", n)
	}
}

func TestLateWriteNotParkedOnAgain(t *testing.T) {
	h := newHarness(t, withParkTimeoutsFiredByTest(), withStub(withValue("k", "shim"), withCounter(3)))
	h.invalidate("k", 10)
	replies := h.parkReads("k", 2)
	if n := h.timers.fire(); n != 1 {
		t.Fatalf("%d park timeouts started for one key, want 1", n)
	}
	for i, ch := range replies {
		if rep := <-ch; string(rep.Value) != "shim" {
			t.Errorf("parked reader %d: %q, want the shim's", i, rep.Value)
		}
	}
	// Write 10 is still pending, and late: a reader reads on at once.
	if rep := h.get("k"); string(rep.Value) != "shim" {
		t.Errorf("GET during the late write: %q, want the shim's own read", rep.Value)
	}
	if s := h.node.Stats(); s.Parked != 2 || s.ParkSkipped != 1 {
		t.Errorf("Parked %d, ParkSkipped %d; want 2 and 1", s.Parked, s.ParkSkipped)
	}
	if n := h.shim.count(wire.OpGet); n != 2 {
		t.Errorf("shim saw %d GETs, want 2 (the parked readers', the late reader's)", n)
	}
	// A later write is not late: its readers park again.
	h.invalidate("k", 11)
	parked := h.parkReads("k", 1)[0]
	if s := h.node.Stats(); s.ParkSkipped != 1 {
		t.Errorf("ParkSkipped %d after write 11's invalidation, want 1", s.ParkSkipped)
	}
	h.update("k", 11, "eleven")
	if rep := <-parked; string(rep.Value) != "eleven" {
		t.Errorf("reader parked under write 11: %q, want \"eleven\"", rep.Value)
	}
}

func TestParkedRetransmissionAnsweredOnce(t *testing.T) {
	h := newHarness(t, withParkTimeoutsFiredByTest())
	h.invalidate("k", 10)
	get, err := wire.Encode(&wire.Message{Header: wire.Header{Op: wire.OpGet, Seq: 1}, Key: []byte("k")}, wire.DefaultDatagram)
	if err != nil {
		t.Fatal(err)
	}
	rawSend(t, h.node.Addr(), get, get)
	eventually(t, "the GET parked and its copy dropped", func() bool {
		s := h.node.Stats()
		return s.Parked == 1 && s.Duplicates == 1
	})
	if n := h.node.parkedOn("k"); n != 1 {
		t.Errorf("%d readers parked, want 1", n)
	}
}

func TestParkingDisabled(t *testing.T) {
	h := newHarness(t,
		withConfig(func(c *Config) { c.ParkTimeout = -1 }),
		withStub(withValue("k", "shim"), withCounter(3)))
	h.invalidate("k", 10)
	if rep := h.get("k"); string(rep.Value) != "shim" {
		t.Errorf("GET during the write: %q, want the shim's own read", rep.Value)
	}
	if s := h.node.Stats(); s.Parked != 0 || h.shim.count(wire.OpGet) != 1 {
		t.Errorf("%d parked, shim saw %d GETs; want 0 and 1", s.Parked, h.shim.count(wire.OpGet))
	}
}

// parkedOn is the number of readers parked on key.
func (n *Node) parkedOn(key string) int {
	n.missMu.Lock()
	defer n.missMu.Unlock()
	if p := n.parked[key]; p != nil {
		return len(p.waiters)
	}
	return 0
}
