package cachenode

import (
	"testing"

	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/placement/partmap"
)

// TestFlush checks FLUSH (flush.go): the node drops the entries of the
// shard it names and keeps the others', and refuses a shard its map does
// not name with StatusNotOwner, dropping nothing.
func TestFlush(t *testing.T) {
	h := newHarness(t)
	m := h.m.Clone()
	m.Version++
	m.Storage.Racks[0].Shards = append(m.Storage.Racks[0].Shards,
		partmap.Shard{Name: partmap.ShardName(testCluster, 0, 1), Address: m.Storage.Racks[0].Shards[0].Address})
	p := h.setMap(m)
	byShard := map[int][]string{}
	for i := 0; len(byShard[0]) < 3 || len(byShard[1]) < 3; i++ {
		k := "flush-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		_, s := p.Shard(k)
		if len(byShard[s]) < 3 {
			byShard[s] = append(byShard[s], k)
			h.cache(k, "v", 1)
		}
	}
	rep := h.call(&wire.Message{Header: wire.Header{Op: wire.OpFlush}, Key: []byte("no-such-shard")})
	if rep.Op != wire.OpFlushAck || rep.Status != wire.StatusNotOwner {
		t.Fatalf("FLUSH of an unknown shard: %s %s, want FLUSH_ACK not_owner", rep.Op, rep.Status)
	}
	rep = h.call(&wire.Message{Header: wire.Header{Op: wire.OpFlush}, Key: []byte(m.Storage.Racks[0].Shards[1].Name)})
	if rep.Op != wire.OpFlushAck || rep.Status != wire.StatusOK {
		t.Fatalf("FLUSH: %s %s, want FLUSH_ACK ok", rep.Op, rep.Status)
	}
	for s, keys := range byShard {
		for _, k := range keys {
			if _, _, _, ok := h.node.Cached(k); ok != (s == 0) {
				t.Errorf("shard %d key %s: cached %v after shard 1 was flushed", s, k, ok)
			}
		}
	}
	if st := h.node.Stats(); st.Flushes != 1 {
		t.Errorf("Flushes %d, want 1", st.Flushes)
	}
}

// TestFlushEndsPendingWrites checks that FLUSH ends the shard's pending
// writes: the readers parked on one go to the shim at once, and a reader
// arriving after the FLUSH is not parked under that write, whose late
// phase 2 could carry a value older than a write the shim no longer
// invalidates this node for.
func TestFlushEndsPendingWrites(t *testing.T) {
	h := newHarness(t, withParkTimeoutsFiredByTest(), withStub(withValue("k", "shim"), withCounter(3)))
	h.invalidate("k", 10)
	parked := h.parkReads("k", 2)
	rep := h.call(&wire.Message{Header: wire.Header{Op: wire.OpFlush}, Key: []byte(h.m.Storage.Racks[0].Shards[0].Name)})
	if rep.Op != wire.OpFlushAck || rep.Status != wire.StatusOK {
		t.Fatalf("FLUSH: %s %s, want FLUSH_ACK ok", rep.Op, rep.Status)
	}
	for i, ch := range parked {
		if r := <-ch; r.Status != wire.StatusOK || string(r.Value) != "shim" {
			t.Errorf("parked reader %d: %s %q, want the shim's \"shim\"", i, r.Status, r.Value)
		}
	}
	if n := h.node.parkedOn("k"); n != 0 {
		t.Fatalf("%d readers parked after the FLUSH, want 0", n)
	}
	if r := h.get("k"); r.Status != wire.StatusOK || string(r.Value) != "shim" {
		t.Errorf("a read after the FLUSH: %s %q, want the shim's \"shim\"", r.Status, r.Value)
	}
	if n := h.node.parkedOn("k"); n != 0 {
		t.Errorf("a read after the FLUSH parked under the ended write")
	}
}
