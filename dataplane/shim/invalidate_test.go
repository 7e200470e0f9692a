package shim

import (
	"testing"

	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/placement/partmap"
)

// TestWriteWaitsForTheFailoverMap checks phase 1 across a cache node's
// failure (DistCache §4.4): a write whose invalidation a dead owner never
// acknowledges does not wait for InvalidateTimeout (here the test's whole
// patience) and is not refused; the map that marks the owner failed
// releases it, the key's new owner is invalidated, and the write completes.
func TestWriteWaitsForTheFailoverMap(t *testing.T) {
	e := newEnv(t, withConfig(func(c *Config) { c.InvalidateTimeout = patience }))
	key := e.key(0, "failover")
	dead := e.owners(key)[0]
	dead.setSilent(true)

	done := e.putAsync(key, "v")
	eventually(t, "the dead owner's invalidation", func() bool { return len(dead.recorded(wire.OpInvalidate, key)) > 0 })

	next, changed, err := e.m.WithState(dead.name, partmap.Failed)
	if err != nil || !changed {
		t.Fatalf("WithState: %v %v", changed, err)
	}
	e.setMap(next)
	r := receive(t, done)
	if r.Status != wire.StatusOK {
		t.Fatalf("PUT: %s, want %s", r.Status, wire.StatusOK)
	}
	successor := e.owners(key)[0]
	if successor == dead {
		t.Fatal("the failed owner still owns the key")
	}
	if _, ok := successor.find(wire.OpInvalidate, key, r.ValueVersion); !ok {
		t.Errorf("the key's new owner %s was not invalidated", successor.name)
	}
	if got := e.redisValue(key); got != "v" {
		t.Errorf("Redis holds %q, want \"v\"", got)
	}
	if st := e.shim.Stats(); st.Released != 1 || st.CoherenceFailures != 0 {
		t.Errorf("%d invalidations released, %d writes refused; want 1 and 0", st.Released, st.CoherenceFailures)
	}
}

// TestPhaseOneKeepsWaitingForActiveOwners checks that a new map that keeps
// a slow owner active does not release it: the write waits for its
// acknowledgement and then updates it in phase 2.
func TestPhaseOneKeepsWaitingForActiveOwners(t *testing.T) {
	e := newEnv(t, withConfig(func(c *Config) { c.InvalidateTimeout = patience }))
	key := e.key(0, "kept")
	slow := e.owners(key)[0]
	slow.setSilent(true)
	done := e.putAsync(key, "v")
	eventually(t, "the slow owner's invalidation", func() bool { return len(slow.recorded(wire.OpInvalidate, key)) > 0 })
	next := e.m.Clone()
	next.Version++
	e.setMap(next)
	slow.setSilent(false) // answers the next retransmission
	r := receive(t, done)
	if r.Status != wire.StatusOK {
		t.Fatalf("PUT: %s, want %s", r.Status, wire.StatusOK)
	}
	slow.waitFor(t, wire.OpUpdate, key, r.ValueVersion)
	if st := e.shim.Stats(); st.Released != 0 {
		t.Errorf("%d invalidations released, want 0", st.Released)
	}
}
