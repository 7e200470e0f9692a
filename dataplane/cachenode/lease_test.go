package cachenode

import (
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/placement/partmap"
)

// expire ends the node's lease as a renewal from long ago would have.
func (h *harness) expire() {
	h.t.Helper()
	h.node.revokeForTest()
	if h.node.leased(time.Now()) {
		h.t.Fatal("lease still valid after expiry")
	}
}

// revokeForTest ends the lease as a node that stopped renewing would see it.
func (n *Node) revokeForTest() {
	n.mapMu.Lock()
	defer n.mapMu.Unlock()
	n.revoke()
}

func TestRenew(t *testing.T) {
	h := newHarness(t, withConfig(func(c *Config) { c.Lease = time.Minute }))
	v := h.m.Version
	tests := []struct {
		name    string
		at      time.Time
		version int64
		renewed bool
		leased  bool
	}{
		{"a read that found an older map", time.Now(), v - 1, false, false},
		{"a read that found a newer map", time.Now(), v + 1, false, false},
		{"a read of the current map long ago: expired at once", time.Now().Add(-2 * time.Minute), v, true, false},
		{"a read of the current map now", time.Now(), v, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.expire()
			if got := h.node.Renew(tt.at, tt.version); got != tt.renewed {
				t.Errorf("Renew = %v, want %v", got, tt.renewed)
			}
			if got := h.node.leased(time.Now()); got != tt.leased {
				t.Errorf("leased = %v, want %v", got, tt.leased)
			}
		})
	}
	// A renewal never shortens the lease.
	h.node.Renew(time.Now(), v)
	h.node.Renew(time.Now().Add(-2*time.Minute), v)
	if !h.node.leased(time.Now()) {
		t.Error("an older read shortened the lease")
	}
	// A node that is not Active gets no lease and loses the one it had.
	h.setState(0, partmap.Fenced)
	if h.node.leased(time.Now()) || h.node.Renew(time.Now(), h.m.Version) {
		t.Error("a Fenced node holds or renewed a lease")
	}
}

// TestExpiredLeaseServesNoCopy checks that a node whose lease ran out
// answers reads of a cached key from the shim, not from its copy, and hits
// again once it renews.
func TestExpiredLeaseServesNoCopy(t *testing.T) {
	h := newHarness(t)
	h.cache("k", "cached", 5)
	if rep := h.get("k"); !rep.Has(wire.FlagHit) {
		t.Fatal("no hit with a lease")
	}
	h.shim.setValue("k", "newer")
	h.expire()
	rep := h.get("k")
	if rep.Has(wire.FlagHit) || string(rep.Value) != "newer" {
		t.Fatalf("GET without a lease: hit=%v %q, want the shim's value", rep.Has(wire.FlagHit), rep.Value)
	}
	if s := h.node.Stats(); s.Unleased != 1 || s.Leased {
		t.Errorf("stats %+v: want 1 unleased read, no lease", s)
	}
	h.node.Renew(time.Now(), h.m.Version)
	if rep := h.get("k"); !rep.Has(wire.FlagHit) || string(rep.Value) != "cached" {
		t.Fatalf("GET after renewal: hit=%v %q, want the copy", rep.Has(wire.FlagHit), rep.Value)
	}
}

// TestFencedNodeRefusesReads checks that a node Fenced in its map answers
// not_owner with its map version and drops its copies.
func TestFencedNodeRefusesReads(t *testing.T) {
	h := newHarness(t)
	h.cache("k", "cached", 5)
	h.setState(0, partmap.Fenced)
	rep := h.get("k")
	if rep.Status != wire.StatusNotOwner || rep.MapVersion != uint64(h.m.Version) {
		t.Fatalf("GET of a Fenced node: %s map version %d, want not_owner %d", rep.Status, rep.MapVersion, h.m.Version)
	}
	if _, _, _, ok := h.node.Cached("k"); ok {
		t.Error("a Fenced node kept its copy")
	}
	if s := h.node.Stats(); s.Refused != 1 {
		t.Errorf("Refused = %d, want 1", s.Refused)
	}
}

// TestSkippedMapVersionEmptiesCache checks that a node that missed a map
// version drops every copy: the missed map may have moved a key away and a
// later one back, while the shims stopped invalidating this node for it.
func TestSkippedMapVersionEmptiesCache(t *testing.T) {
	for _, tt := range []struct {
		name string
		step int64
		kept bool
	}{
		{"next version: owned keys kept", 1, true},
		{"a version skipped: emptied", 2, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.cache("k", "cached", 5)
			next := h.m.Clone()
			next.Version += tt.step
			h.setMap(next)
			if _, _, valid, ok := h.node.Cached("k"); ok != tt.kept || ok && !valid {
				t.Errorf("cached=%v valid=%v, want cached=%v", ok, valid, tt.kept)
			}
		})
	}
}

// TestSharedReadsNeedLeaseAndTracking checks when readers may share a
// backend read: only under the lease, and only the first reader takes a
// reply the shim did not mark FlagTracked.
func TestSharedReadsNeedLeaseAndTracking(t *testing.T) {
	t.Run("no lease: each reader reads the shim", func(t *testing.T) {
		h := newHarness(t, withStub(holding(wire.OpGet), withValue("k", "v")))
		h.expire()
		a, b := h.getAsync("k"), h.getAsync("k")
		first, second := h.shim.nextHeld(h.ctx, t), h.shim.nextHeld(h.ctx, t)
		first.release()
		second.release()
		for _, ch := range []<-chan wire.Message{a, b} {
			if rep := <-ch; string(rep.Value) != "v" {
				t.Errorf("reply %q", rep.Value)
			}
		}
		if s := h.node.Stats(); s.Coalesced != 0 {
			t.Errorf("Coalesced = %d without a lease, want 0", s.Coalesced)
		}
	})
	t.Run("untracked reply: joiners read again", func(t *testing.T) {
		h := newHarness(t, withStub(holding(wire.OpGet), withValue("k", "old"), untracked()))
		a := h.getAsync("k")
		first := h.shim.nextHeld(h.ctx, t)
		b := h.getAsync("k")
		eventually(t, "the second reader joined", func() bool { return h.node.Stats().Coalesced == 1 })
		h.shim.setValue("k", "new") // a write the shim did not invalidate this node for
		first.reply(0, "old")
		if rep := <-a; string(rep.Value) != "old" {
			t.Errorf("first reader got %q, want the value its read found", rep.Value)
		}
		again := h.shim.nextHeld(h.ctx, t)
		again.release()
		if rep := <-b; string(rep.Value) != "new" {
			t.Errorf("joined reader got %q, want a read of its own (%q)", rep.Value, "new")
		}
		if s := h.node.Stats(); s.Untracked != 1 {
			t.Errorf("Untracked = %d, want 1", s.Untracked)
		}
	})
	t.Run("map change seals the flight", func(t *testing.T) {
		h := newHarness(t, withStub(holding(wire.OpGet), withValue("k", "v")))
		a := h.getAsync("k")
		first := h.shim.nextHeld(h.ctx, t)
		next := h.m.Clone()
		next.Version++
		h.setMap(next)
		b := h.getAsync("k")
		second := h.shim.nextHeld(h.ctx, t)
		first.release()
		second.release()
		<-a
		<-b
		if s := h.node.Stats(); s.Coalesced != 0 {
			t.Errorf("Coalesced = %d across a map change, want 0", s.Coalesced)
		}
	})
}

// TestNoParkingWithoutLease checks that a reader that arrives during a
// pending write without the lease reads the shim instead of parking: the
// write's phase 2 may never come to a node the shim released.
func TestNoParkingWithoutLease(t *testing.T) {
	h := newHarness(t, withStub(withValue("k", "v")))
	h.invalidate("k", 10)
	h.expire()
	if rep := h.get("k"); string(rep.Value) != "v" {
		t.Fatalf("GET during a write without a lease: %q", rep.Value)
	}
	if s := h.node.Stats(); s.Parked != 0 || h.shim.count(wire.OpGet) != 1 {
		t.Errorf("parked %d, shim GETs %d; want 0 and 1", s.Parked, h.shim.count(wire.OpGet))
	}
}
