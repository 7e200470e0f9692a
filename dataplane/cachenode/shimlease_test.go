package cachenode

import (
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/wire"
)

// newLeaseHarness is a harness whose node holds the shims' leases
// (Config.ShimLeases) and whose stub shim holds every RENEW for the test
// to answer.
func newLeaseHarness(t *testing.T) *harness {
	t.Helper()
	return newHarness(t, withConfig(func(c *Config) { c.ShimLeases = true }), withStub(holding(wire.OpRenew)))
}

// answerRenew answers the next RENEW with a grant of epoch e for length
// and waits until the node applied it.
func (h *harness) answerRenew(e uint64, length time.Duration) {
	h.t.Helper()
	before := h.node.Stats().ShimGrants
	r := h.shim.nextHeld(h.ctx, h.t)
	if r.req.Op != wire.OpRenew || string(r.req.Key) != h.node.shims.layout[0] {
		h.t.Fatalf("held %s %q, want RENEW of shard %q", r.req.Op, r.req.Key, h.node.shims.layout[0])
	}
	r.grant(e, length)
	eventually(h.t, "the grant applied", func() bool { return h.node.Stats().ShimGrants > before })
}

// renew runs a renewal round and answers its RENEW with epoch e for
// length.
func (h *harness) renew(e uint64, length time.Duration) {
	h.t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); h.node.renewShims() }()
	h.answerRenew(e, length)
	select {
	case <-done:
	case <-h.ctx.Done():
		h.t.Fatal("the renewal round did not end")
	}
}

// leasedCache inserts key under the shim's first grant, of epoch e for
// length: the insertion asks for the grant and waits for it.
func (h *harness) leasedCache(key, value string, e uint64, length time.Duration) {
	h.t.Helper()
	h.shim.setValue(key, value)
	h.shim.setEpoch(e)
	h.heat(key, testThreshold)
	done := h.insertAsync() // asks for the first grant before it fetches
	h.answerRenew(e, length)
	if r := h.wait(done); r.Inserted != 1 {
		h.t.Fatalf("InsertHot under the first grant: %+v, want 1 inserted", r)
	}
	eventually(h.t, "the fill applied", func() bool { _, _, valid, _ := h.node.Cached(key); return valid })
}

// TestShimLeaseServesHitsUnderTheGrant checks that a key is inserted only
// once its shim granted a lease, and is then served from the cache.
func TestShimLeaseServesHitsUnderTheGrant(t *testing.T) {
	h := newLeaseHarness(t)
	const e = 5<<32 | 1
	h.leasedCache("k", "v1", e, testDeadline)
	if rep := h.get("k"); !rep.Has(wire.FlagHit) || string(rep.Value) != "v1" {
		t.Fatalf("GET under the lease: hit=%v %q, want a hit of v1", rep.Has(wire.FlagHit), rep.Value)
	}
	if st := h.node.Stats(); st.ShimFlushes != 1 || st.StaleEpochs != 0 {
		t.Errorf("stats %+v: want the first grant's flush only, no stale epoch", st)
	}
}

// TestShimLeaseEnded checks that a cached copy is not served once the
// shim's lease ended (nothing renews it here), though the map lease holds.
func TestShimLeaseEnded(t *testing.T) {
	h := newLeaseHarness(t)
	const e = 5<<32 | 1
	// Long enough for the insertion to find it held however busy the
	// machine; nothing renews it after.
	h.leasedCache("k", "v1", e, time.Second)
	eventually(t, "a GET of the cached key answered by the shim", func() bool {
		rep := h.get("k")
		return !rep.Has(wire.FlagHit)
	})
	if st := h.node.Stats(); st.Unleased == 0 || st.Leased {
		t.Errorf("stats %+v: want unleased reads and no lease", st)
	}
	if _, _, valid, _ := h.node.Cached("k"); !valid {
		t.Error("the copy is gone: want it kept, only not served")
	}
}

// TestShimLeaseRenewedBeforeInsertion checks that a node whose lease of a
// shim ran out while it held none of its keys — so nothing renewed it,
// and the shim moved it to a new epoch meanwhile — takes the new epoch
// before it fetches: otherwise every fill would be of an epoch it does
// not hold, and it would never cache the shim's keys again.
func TestShimLeaseRenewedBeforeInsertion(t *testing.T) {
	h := newLeaseHarness(t)
	const e = 5<<32 | 1
	h.node.granted(0, true) // the shim's first grant, over at once
	h.renew(e, time.Nanosecond)
	h.shim.setValue("k", "v1")
	h.shim.setEpoch(e + 1) // the shim released the node meanwhile
	h.heat("k", testThreshold)
	done := h.insertAsync()
	h.answerRenew(e+1, testDeadline)
	if r := h.wait(done); r.Inserted != 1 {
		t.Fatalf("InsertHot: %+v, want the key inserted in the new epoch", r)
	}
	if rep := h.get("k"); !rep.Has(wire.FlagHit) || string(rep.Value) != "v1" {
		t.Fatalf("GET: hit=%v %q, want a hit of v1", rep.Has(wire.FlagHit), rep.Value)
	}
}

// TestShimLeaseNewEpochFlushes checks that a grant of a new epoch drops
// the shim's entries before the lease holds again: the shim wrote their
// keys without the node.
func TestShimLeaseNewEpochFlushes(t *testing.T) {
	h := newLeaseHarness(t)
	const e = 5<<32 | 1
	h.leasedCache("k", "v1", e, testDeadline)
	h.renew(e+1, testDeadline)
	if _, _, _, ok := h.node.Cached("k"); ok {
		t.Fatal("entry kept across a new epoch")
	}
	if rep := h.get("k"); rep.Has(wire.FlagHit) {
		t.Fatal("GET after the new epoch: a hit, want a miss")
	}
	if st := h.node.Stats(); st.ShimFlushes != 2 || st.Items != 0 {
		t.Errorf("stats %+v: want 2 flushes (first grant, new epoch), no items", st)
	}
}

// TestShimLeaseStaleEpochValues checks that an UPDATE or a fill sent in
// an epoch the node does not hold never reaches the cache.
func TestShimLeaseStaleEpochValues(t *testing.T) {
	h := newLeaseHarness(t)
	const e = 5<<32 | 1
	h.leasedCache("k", "v1", e, testDeadline)
	_, v, _, _ := h.node.Cached("k")

	old := wire.Message{Header: wire.Header{Op: wire.OpUpdate, ValueVersion: v + 1}, Key: []byte("k"), Value: []byte("v2")}
	old.SetEpoch(e - 1)
	h.invalidate("k", v+1)
	h.updateMessage(&old)
	if _, _, valid, _ := h.node.Cached("k"); valid {
		t.Fatal("UPDATE of another epoch applied")
	}
	cur := wire.Message{Header: wire.Header{Op: wire.OpUpdate, ValueVersion: v + 1}, Key: []byte("k"), Value: []byte("v2")}
	cur.SetEpoch(e)
	h.updateMessage(&cur)
	if rep := h.get("k"); !rep.Has(wire.FlagHit) || string(rep.Value) != "v2" {
		t.Fatalf("GET after the UPDATE of the held epoch: hit=%v %q, want a hit of v2", rep.Has(wire.FlagHit), rep.Value)
	}

	h.shim.setValue("other", "x")
	h.shim.setEpoch(e + 7) // fills of an epoch the node does not hold
	h.heat("other", testThreshold)
	if r := h.node.InsertHot(h.ctx); r.Inserted != 0 || r.Failed != 1 {
		t.Fatalf("InsertHot: %+v, want 1 failed fill", r)
	}
	if _, _, _, ok := h.node.Cached("other"); ok {
		t.Fatal("a fill of another epoch kept")
	}
	if got := h.node.Stats().StaleEpochs; got != 2 {
		t.Errorf("StaleEpochs = %d, want 2 (the UPDATE, the fill)", got)
	}
}

// TestShimLeaseNeedsTheShimsMap checks that a grant made under a map newer
// than the node's gives no lease, and asks the node to read its map.
func TestShimLeaseNeedsTheShimsMap(t *testing.T) {
	behind := make(chan int64, 1)
	h := newHarness(t, withConfig(func(c *Config) {
		c.ShimLeases = true
		c.MapBehind = func(v int64) { behind <- v }
	}), withStub(holding(wire.OpRenew)))
	h.shim.setValue("k", "v1")
	h.heat("k", testThreshold)
	done := h.insertAsync()
	newer := uint64(h.node.view.Load().version) + 1
	r := h.shim.nextHeld(h.ctx, h.t)
	r.grantUnder(5<<32|1, testDeadline, newer)
	if res := h.wait(done); res.Inserted != 0 {
		t.Fatalf("InsertHot: %+v, want nothing inserted without a lease", res)
	}
	select {
	case v := <-behind:
		if v != int64(newer) {
			t.Errorf("MapBehind(%d), want %d", v, newer)
		}
	case <-h.ctx.Done():
		t.Fatal("MapBehind not called")
	}
	if st := h.node.Stats(); st.ShimGrants != 0 || st.ShimBehind != 1 {
		t.Errorf("stats %+v: want no grant applied, 1 behind", st)
	}
}
