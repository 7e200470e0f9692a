package cachenode

import (
	"testing"

	"github.com/distcache/distcache/dataplane/wire"
)

// TestDirectReaderGet checks a GET of a reader that reads storage itself
// (wire.FlagDirect): a valid copy is a hit; without one the node answers
// at once with StatusUnavailable and FlagDirect, reads nothing from the
// shim and still counts the miss; under a pending write the reader is
// parked and answered by the write's phase 2, as any other.
func TestDirectReaderGet(t *testing.T) {
	tests := []struct {
		name       string
		cached     bool
		pending    bool // a write of k is between its phases
		wantStatus wire.Status
		wantFlag   wire.Flag
		wantValue  string
		wantDirect uint64
	}{
		{name: "copy: a hit", cached: true, wantStatus: wire.StatusOK, wantFlag: wire.FlagHit, wantValue: "cached"},
		{name: "no copy: read it yourself", wantStatus: wire.StatusUnavailable, wantFlag: wire.FlagDirect, wantDirect: 1},
		{name: "pending write: parked, answered by phase 2", pending: true, wantStatus: wire.StatusOK, wantValue: "new"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, withParkTimeoutsFiredByTest(), withStub(withValue("k", "stored")))
			if tt.cached {
				h.cache("k", "cached", 42)
			}
			gets := h.shim.count(wire.OpGet)
			var rep wire.Message
			if tt.pending {
				h.invalidate("k", 10)
				before := h.node.Stats().Parked
				ch := h.getAsyncFlags("k", wire.FlagDirect)
				eventually(t, "the GET parked", func() bool { return h.node.Stats().Parked == before+1 })
				h.update("k", 10, "new")
				rep = <-ch
			} else {
				rep = h.call(&wire.Message{Header: wire.Header{Op: wire.OpGet, Flags: wire.FlagDirect}, Key: []byte("k")})
			}
			if rep.Status != tt.wantStatus || string(rep.Value) != tt.wantValue || (tt.wantFlag != 0 && !rep.Has(tt.wantFlag)) {
				t.Fatalf("reply %s %q flags %#x, want %s %q with %#x", rep.Status, rep.Value, rep.Flags, tt.wantStatus, tt.wantValue, tt.wantFlag)
			}
			if !rep.Has(wire.FlagTelemetry) {
				t.Error("the reply carries no load")
			}
			if n := h.shim.count(wire.OpGet) - gets; n != 0 {
				t.Errorf("the shim got %d GETs for a direct reader, want 0", n)
			}
			s := h.node.Stats()
			if s.DirectMisses != tt.wantDirect {
				t.Errorf("DirectMisses = %d, want %d", s.DirectMisses, tt.wantDirect)
			}
			if !tt.cached && s.Misses != 1 {
				t.Errorf("Misses = %d, want 1: a direct reader's miss counts for hot-key detection", s.Misses)
			}
		})
	}
}
