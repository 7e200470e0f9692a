package softswitch

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/distcache/distcache/dataplane/wire"
)

const forever = math.MaxUint64 >> 16 // a lease that outlasts the test (48 bits)

// TestFillThenHit: the controller's FETCH leaves by the coherence port,
// the shim's FETCH_REPLY fills the slot and reaches the controller, and a
// GET is then answered by the switch with the value, its version, FlagHit
// and the switch's telemetry; the shim sees no read.
func TestFillThenHit(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 9, 100, wire.MaxSwitchValueLen} {
		h := newHarness(t)
		value := bytes.Repeat([]byte{0xab}, n)
		for i := range value {
			value[i] = byte(i + 1)
		}
		h.setValue("hot", value, 10)
		h.cacheKey(t, "hot", 5, 4242)
		h.lease(t, forever)
		if r := h.fetch(t, "hot", 4242); r.Op != wire.OpFetchReply || r.ValueVersion != 10 {
			t.Fatalf("packet-in %s version %d", r.Op, r.ValueVersion)
		}
		if h.readRegister(t, "valid", 5) != 1 {
			t.Fatalf("value of %d bytes: slot not valid after the fill", n)
		}
		r := h.get(t, "hot", 0)
		if !r.Has(wire.FlagHit|wire.FlagTelemetry) || r.Status != wire.StatusOK || !bytes.Equal(r.Value, value) ||
			r.ValueVersion != 10 || r.NodeID != testNode || r.MapVersion != testMapVersion || r.Load == 0 {
			t.Errorf("value of %d bytes: reply %+v value %x", n, r.Header, r.Value)
		}
		for _, req := range h.requests() {
			if req.Op == wire.OpGet {
				t.Errorf("value of %d bytes: the shim saw a GET", n)
			}
		}
	}
}

// TestMissIsRelayed: a GET of an uncached key reaches the shim from the
// switch's read port under the switch's sequence number, and the shim's
// reply reaches the client from the port it asked, with its own sequence
// number and the switch's telemetry.
func TestMissIsRelayed(t *testing.T) {
	h := newHarness(t)
	h.setValue("cold", []byte("v1"), 3)
	r := h.get(t, "cold", 0)
	if r.Has(wire.FlagHit) || !r.Has(wire.FlagTelemetry) || string(r.Value) != "v1" || r.ValueVersion != 3 || r.NodeID != testNode {
		t.Errorf("reply %+v %q", r.Header, r.Value)
	}
	reqs := h.requests()
	if len(reqs) != 1 || reqs[0].Op != wire.OpGet {
		t.Fatalf("the shim saw %d requests", len(reqs))
	}
	if h.sw.Stats().Relayed.Load() != 1 || h.sw.Stats().Replies.Load() != 1 {
		t.Errorf("relayed %d, replies %d", h.sw.Stats().Relayed.Load(), h.sw.Stats().Replies.Load())
	}
	// A key too long for the switch is relayed too.
	long := strings.Repeat("k", wire.MaxSwitchKeyLen+1)
	h.setValue(long, []byte("big"), 1)
	if r := h.get(t, long, 0); string(r.Value) != "big" || r.Has(wire.FlagHit) {
		t.Errorf("long key: %+v %q", r.Header, r.Value)
	}
}

// TestCoherence: INVALIDATE makes the copy invalid (reads go to the
// shim) and is acknowledged with FlagHit; the write's UPDATE refills it;
// an UPDATE of an older write, and a FETCH_REPLY older than the slot's
// version, write nothing; an INVALIDATE of a key without a slot is
// acknowledged without FlagHit.
func TestCoherence(t *testing.T) {
	h := newHarness(t)
	h.setValue("k", []byte("v10"), 10)
	h.cacheKey(t, "k", 1, 99)
	h.lease(t, forever)
	h.fetch(t, "k", 99)

	if ack := h.coherence(t, wire.OpInvalidate, "k", nil, 11); ack.Op != wire.OpInvalidateAck || !ack.Has(wire.FlagHit) {
		t.Fatalf("INVALIDATE ack %+v", ack.Header)
	}
	h.setValue("k", []byte("v11"), 11)
	if r := h.get(t, "k", 0); r.Has(wire.FlagHit) || string(r.Value) != "v11" {
		t.Errorf("read during the write: %+v %q", r.Header, r.Value)
	}
	if ack := h.coherence(t, wire.OpUpdate, "k", []byte("v10-late"), 10); ack.Op != wire.OpUpdateAck || len(ack.Value) != 0 {
		t.Errorf("UPDATE ack %+v %q", ack.Header, ack.Value)
	}
	if h.readRegister(t, "valid", 1) != 0 {
		t.Error("an UPDATE of an older write made the copy valid")
	}
	h.coherence(t, wire.OpUpdate, "k", []byte("v11"), 11)
	if r := h.get(t, "k", 0); !r.Has(wire.FlagHit) || string(r.Value) != "v11" || r.ValueVersion != 11 {
		t.Errorf("read after the write: %+v %q", r.Header, r.Value)
	}

	// A fill older than a write that invalidated the slot is refused.
	h.coherence(t, wire.OpInvalidate, "k", nil, 20)
	h.setValue("k", []byte("stale"), 15)
	h.write(t, p4v1.Update_MODIFY, registerEntry(t, "fill_seq", 1, u64(100)))
	h.fetch(t, "k", 100)
	if h.readRegister(t, "valid", 1) != 0 {
		t.Error("a fill of version 15 filled a slot invalidated at version 20")
	}
	if ack := h.coherence(t, wire.OpInvalidate, "other", nil, 1); ack.Has(wire.FlagHit) {
		t.Errorf("INVALIDATE of a key without a slot acknowledged with FlagHit")
	}
}

// TestNoLeaseNoHit: a valid copy is not served once the lease ran out,
// nor before the controller granted one; the read goes to the shim.
func TestNoLeaseNoHit(t *testing.T) {
	h := newHarness(t)
	h.setValue("k", []byte("v"), 1)
	h.cacheKey(t, "k", 2, 7)
	h.fetch(t, "k", 7)
	if r := h.get(t, "k", 0); r.Has(wire.FlagHit) {
		t.Error("a hit without a lease")
	}
	h.lease(t, forever)
	if r := h.get(t, "k", 0); !r.Has(wire.FlagHit) {
		t.Error("no hit under the lease")
	}
	h.lease(t, h.readRegister(t, "clock", 0)) // ran out at the last packet
	if r := h.get(t, "k", 0); r.Has(wire.FlagHit) {
		t.Error("a hit after the lease ran out")
	}
}

// TestHedgedReadRefused: a FLAG_CACHE_ONLY read without a valid copy is
// refused with StatusUnavailable, never sent to the shim.
func TestHedgedReadRefused(t *testing.T) {
	h := newHarness(t)
	h.setValue("k", []byte("v"), 1)
	if r := h.get(t, "k", wire.FlagCacheOnly); r.Status != wire.StatusUnavailable || len(h.requests()) != 0 {
		t.Errorf("hedged read: status %s, shim saw %d requests", r.Status, len(h.requests()))
	}
}

// TestHotKeyReported: an uncached key read as often as the threshold is
// reported once (the Bloom filter), with its digest and count.
func TestHotKeyReported(t *testing.T) {
	h := newHarness(t)
	h.setValue("warm", []byte("v"), 1)
	h.write(t, p4v1.Update_MODIFY, registerEntry(t, "hot_threshold", 0, u64(3)))
	for range 5 {
		h.get(t, "warm", 0)
	}
	select {
	case r := <-h.sw.hotKeys:
		if r.Count != 3 || !bytes.Equal(r.Digest[:], digestOf([]byte("warm"))) || string(r.Key) != "warm" {
			t.Errorf("report %+v", r)
		}
	case <-time.After(callTimeout):
		t.Fatal("no hot-key report")
	}
	select {
	case r := <-h.sw.hotKeys:
		t.Errorf("a second report %+v", r)
	default:
	}
}

// TestPingAnswered: the coherence port answers a PING with a PONG
// carrying the switch's telemetry, as a cache node answers the control
// loop's probe.
func TestPingAnswered(t *testing.T) {
	h := newHarness(t)
	if r := h.coherence(t, wire.OpPing, "ping", nil, 0); r.Op != wire.OpPong || r.NodeID != testNode {
		t.Errorf("reply %+v", r.Header)
	}
}
