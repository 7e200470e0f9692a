package shim

import (
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/wire"
)

// TestRenew checks the shim's grants: a RENEW for its shard is answered
// with the node's epoch (FlagEpoch), the same one for every renewal while
// no write released the node, and counted; a RENEW for another shard is
// refused and grants nothing.
func TestRenew(t *testing.T) {
	e := newEnv(t)
	first := e.call(wire.OpRenew, e.cfg.Shard, nil)
	if first.Op != wire.OpRenewReply || first.Status != wire.StatusOK || !first.Has(wire.FlagEpoch) || first.Epoch() == 0 {
		t.Fatalf("RENEW = %s %s flags %#x epoch %#x, want RENEW_REPLY ok with an epoch", first.Op, first.Status, first.Flags, first.Epoch())
	}
	if got := time.Duration(first.ValueVersion); got != e.shim.cfg.Lease {
		t.Fatalf("grant's length %v, want the shim's lease %v", got, e.shim.cfg.Lease)
	}
	if again := e.call(wire.OpRenew, e.cfg.Shard, nil); again.Epoch() != first.Epoch() {
		t.Fatalf("second grant's epoch %#x, want the first's %#x", again.Epoch(), first.Epoch())
	}
	other := e.call(wire.OpRenew, e.cfg.Shard+"-other", nil)
	if other.Status != wire.StatusNotOwner || other.Has(wire.FlagEpoch) {
		t.Fatalf("RENEW of another shard = %s flags %#x, want not_owner without an epoch", other.Status, other.Flags)
	}
	if got := e.shim.Stats().LeaseGrants; got != 2 {
		t.Fatalf("LeaseGrants = %d, want 2", got)
	}
}

// renew asks the shim for a lease from n's address and returns the epoch.
func (e *env) renew(n *recordingNode) uint64 {
	e.t.Helper()
	r := e.callFrom(n.ep, wire.OpRenew, e.cfg.Shard, nil)
	if r.Status != wire.StatusOK || r.Epoch() == 0 {
		e.t.Fatalf("RENEW from %s: %s, epoch %#x", n.name, r.Status, r.Epoch())
	}
	return r.Epoch()
}

// TestWriteReleasesARenewedOwnerByLease checks the shim's release by
// lease: a silent owner that renewed a lease is released once the lease
// ended, with no map change, and moved to a new epoch; the write
// completes. The owners that acknowledged get UPDATEs with their epochs
// if they renewed, and without one if they did not. The owners renew
// once the shim accepts writes (a lease after its first map): a write
// that starts after an owner's lease ended releases it at once, and the
// live owner, renewed at the shim's start, was sometimes released so.
func TestWriteReleasesARenewedOwnerByLease(t *testing.T) {
	e := newEnv(t, withConfig(func(c *Config) { c.InvalidateTimeout, c.Lease = patience, time.Second }))
	e.mustStatus(wire.OpPut, e.key(0, "first"), []byte("x"), wire.StatusOK) // waits until writes start
	key := e.key(0, "leased")
	owners := e.owners(key)
	silent, live := owners[0], owners[1]
	epoch := e.renew(silent)
	liveEpoch := e.renew(live)
	for _, o := range owners {
		o.setHolds(key, true)
		e.shim.holders.add(key, o.ep.Addr())
	}
	silent.setSilent(true)

	r := receive(t, e.putAsync(key, "v"))
	if r.Status != wire.StatusOK {
		t.Fatalf("PUT: %s, want ok", r.Status)
	}
	if st := e.shim.Stats(); st.LeaseReleases != 1 || st.Released != 1 || st.CoherenceFailures != 0 {
		t.Fatalf("%d released by lease, %d released, %d refused; want 1, 1, 0", st.LeaseReleases, st.Released, st.CoherenceFailures)
	}
	if got := e.renew(silent); got != epoch+1 {
		t.Fatalf("the released owner's epoch %#x, want %#x", got, epoch+1)
	}
	update := live.waitFor(t, wire.OpUpdate, key, r.ValueVersion)
	if update.epoch != liveEpoch {
		t.Fatalf("UPDATE to a renewed owner carries epoch %#x, want %#x", update.epoch, liveEpoch)
	}
	for _, o := range owners[2:] {
		if u := o.waitFor(t, wire.OpUpdate, key, r.ValueVersion); u.epoch != 0 {
			t.Fatalf("UPDATE to %s, which never renewed, carries epoch %#x", o.name, u.epoch)
		}
	}
}

// TestSilentOwnerWithoutLeaseIsWaitedFor checks the upgrade's handshake
// at the shim: a silent owner that never renewed is not released by
// lease; with the map unchanged the write is refused at its timeout.
func TestSilentOwnerWithoutLeaseIsWaitedFor(t *testing.T) {
	e := newEnv(t, withConfig(func(c *Config) { c.InvalidateTimeout = 20 * testLease }))
	key := e.key(0, "unleased")
	silent := e.owners(key)[0]
	silent.setHolds(key, true)
	e.shim.holders.add(key, silent.ep.Addr())
	silent.setSilent(true)
	r := receive(t, e.putAsync(key, "v"))
	if r.Status != wire.StatusCoherence {
		t.Fatalf("PUT: %s, want %s", r.Status, wire.StatusCoherence)
	}
	if st := e.shim.Stats(); st.LeaseReleases != 0 || st.Released != 0 {
		t.Fatalf("%d released by lease, %d released; want none", st.LeaseReleases, st.Released)
	}
}
