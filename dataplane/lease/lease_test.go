package lease

import (
	"net/netip"
	"testing"
	"time"
)

const ms = time.Millisecond

func TestHolder(t *testing.T) {
	h, err := NewHolder(2, 100*ms)
	if err != nil {
		t.Fatal(err)
	}
	if !h.Current(0, 5) {
		t.Error("before the first grant: a value of any epoch not Current")
	}
	flushes := 0
	flush := func() { flushes++ }
	steps := []struct {
		name       string
		epoch      uint64
		sent       time.Duration
		wantFlush  bool
		at         time.Duration
		wantValid  bool
		wantFlushN int
	}{
		{name: "first grant adopts the epoch", epoch: 7, sent: 0, wantFlush: true, at: 99 * ms, wantValid: true, wantFlushN: 1},
		{name: "ends at sent plus the length", epoch: 7, sent: 0, at: 100 * ms, wantValid: false, wantFlushN: 1},
		{name: "a later renewal extends it", epoch: 7, sent: 50 * ms, at: 149 * ms, wantValid: true, wantFlushN: 1},
		{name: "an older renewal shortens nothing", epoch: 7, sent: 10 * ms, at: 149 * ms, wantValid: true, wantFlushN: 1},
		{name: "a renewal after a gap in the same epoch", epoch: 7, sent: 300 * ms, at: 399 * ms, wantValid: true, wantFlushN: 1},
		{name: "a new epoch flushes first", epoch: 8, sent: 310 * ms, wantFlush: true, at: 409 * ms, wantValid: true, wantFlushN: 2},
		{name: "a late grant of the old epoch changes nothing", epoch: 7, sent: 400 * ms, at: 410 * ms, wantValid: false, wantFlushN: 2},
		{name: "another run of the shim flushes", epoch: 1<<32 | 1, sent: 400 * ms, wantFlush: true, at: 499 * ms, wantValid: true, wantFlushN: 3},
		{name: "epoch 0 is no grant", epoch: 0, sent: 900 * ms, at: 950 * ms, wantValid: false, wantFlushN: 3},
	}
	for _, s := range steps {
		if got := h.Grant(0, s.epoch, s.sent, 100*ms, flush); got != s.wantFlush {
			t.Errorf("%s: Grant flushed %v, want %v", s.name, got, s.wantFlush)
		}
		if got := h.Valid(0, s.at); got != s.wantValid {
			t.Errorf("%s: Valid at %v = %v, want %v", s.name, s.at, got, s.wantValid)
		}
		if flushes != s.wantFlushN {
			t.Errorf("%s: %d flushes, want %d", s.name, flushes, s.wantFlushN)
		}
	}
	if h.Valid(1, 0) {
		t.Error("a shim that granted nothing: Valid, want not")
	}
	if !h.Current(0, 1<<32|1) || h.Current(0, 8) {
		t.Error("Current: want only the held epoch of shim 0")
	}
}

// TestHolderBounds checks the holder's limits: a grant lasts the shorter
// of its length and the holder's, and a shim out of range holds nothing.
func TestHolderBounds(t *testing.T) {
	h, err := NewHolder(1, 100*ms)
	if err != nil {
		t.Fatal(err)
	}
	h.Grant(0, 1, 0, 50*ms, func() {})
	if h.Valid(0, 50*ms) || !h.Valid(0, 49*ms) {
		t.Error("a grant of 50ms: want it to end at 50ms")
	}
	h.Grant(0, 1, 0, time.Hour, func() {})
	if h.Valid(0, 100*ms) {
		t.Error("a grant longer than the holder's length: want the holder's")
	}
	if h.Grant(0, 2, 0, 0, func() { t.Error("flushed for a grant of no length") }) {
		t.Error("a grant of no length: want none")
	}
	for _, shim := range []int{-1, 1} {
		if h.Valid(shim, 0) || h.Current(shim, 1) || h.Grant(shim, 1, 0, ms, func() {}) {
			t.Errorf("shim %d out of range: want no lease", shim)
		}
	}
}

// TestHolderFlushServesNothing checks that during a flush the lease of
// the old epoch no longer holds: no value of it is served meanwhile.
func TestHolderFlushServesNothing(t *testing.T) {
	h, err := NewHolder(1, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	h.Grant(0, 1, 0, time.Second, func() {})
	h.Grant(0, 2, 0, time.Second, func() {
		if h.Valid(0, ms) {
			t.Error("Valid during the flush of a new epoch")
		}
		if h.Current(0, 1) {
			t.Error("the old epoch Current during its flush")
		}
	})
	if !h.Valid(0, ms) || !h.Current(0, 2) {
		t.Error("after the flush: want the new epoch's lease")
	}
}

func TestGrantor(t *testing.T) {
	g, err := NewGrantor(1000*ms, 100*ms, 5*ms, 3)
	if err != nil {
		t.Fatal(err)
	}
	a, b := netip.MustParseAddrPort("198.18.0.1:7000"), netip.MustParseAddrPort("198.18.0.2:7000")
	if _, _, ok := g.Renewed(a); ok {
		t.Fatal("a node that never renewed: Renewed, want not")
	}
	first := g.Epoch(a)
	if first>>32 != 3 {
		t.Fatalf("epoch %#x does not carry the incarnation 3", first)
	}
	// A node the shim has not heard from may hold a lease of an earlier run.
	if ok, wait := g.Release(a, 1050*ms); ok || wait != 55*ms {
		t.Fatalf("Release after the start = %v, %v; want to wait 55ms", ok, wait)
	}
	if e := g.Grant(a, 1100*ms); e != first {
		t.Fatalf("Grant epoch %d, want %d", e, first)
	}
	g.Grant(a, 1090*ms) // an earlier send time shortens nothing
	if until, e, ok := g.Renewed(a); !ok || until != 1205*ms || e != first {
		t.Fatalf("Renewed = %v, %#x, %v; want 1.205s, %#x, true", until, e, ok, first)
	}
	if ok, wait := g.Release(a, 1200*ms); ok || wait != 5*ms {
		t.Fatalf("Release before the grant's end = %v, %v; want to wait 5ms", ok, wait)
	}
	if ok, _ := g.Release(a, 1205*ms); !ok {
		t.Fatal("Release at the grant's end refused")
	}
	if g.Epoch(a) != first+1 {
		t.Fatalf("epoch after a release %d, want %d", g.Epoch(a), first+1)
	}
	if e := g.Grant(a, 1300*ms); e != first+1 {
		t.Fatalf("a grant after the release carries %d, want the new epoch %d", e, first+1)
	}
	if g.Epoch(b) != first {
		t.Fatal("another node's epoch moved")
	}
}

func TestNewRefuses(t *testing.T) {
	if _, err := NewHolder(0, time.Second); err == nil {
		t.Error("NewHolder with no shims: want an error")
	}
	if _, err := NewHolder(1, 0); err == nil {
		t.Error("NewHolder with no length: want an error")
	}
	if _, err := NewGrantor(0, 0, 0, 1); err == nil {
		t.Error("NewGrantor with no length: want an error")
	}
	if _, err := NewGrantor(0, time.Second, -1, 1); err == nil {
		t.Error("NewGrantor with a negative margin: want an error")
	}
}
