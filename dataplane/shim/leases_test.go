package shim

import (
	"testing"

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
