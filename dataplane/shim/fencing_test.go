package shim

import (
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/placement/partmap"
)

// TestGetTracked checks when a GET reply tells a cache node that the shim
// keeps invalidating it for the key (wire.FlagTracked).
func TestGetTracked(t *testing.T) {
	e := newEnv(t)
	key := e.key(0, "tracked")
	e.mustStatus(wire.OpPut, key, []byte("v"), wire.StatusOK)
	idle := func() bool { return e.shim.locks.waiters(key) == 0 }
	eventually(t, "the write released the key", idle) // phase 2 runs after the reply
	owner := e.owners(key)[0]
	var other *recordingNode
	for _, n := range e.nodes {
		if !isOwnerNode(e.owners(key), n) {
			other = n
			break
		}
	}
	get := func(n *recordingNode, flags wire.Flag) wire.Message {
		t.Helper()
		r := e.callFromWith(n.ep, wire.Message{Header: wire.Header{Op: wire.OpGet, Flags: flags}, Key: []byte(key)})
		if r.Status != wire.StatusOK || string(r.Value) != "v" {
			t.Fatalf("GET from %s: %s %q", n.name, r.Status, r.Value)
		}
		return r
	}
	if r := get(owner, 0); !r.Has(wire.FlagTracked) {
		t.Error("GET from the key's Active owner: not tracked")
	}
	if r := get(other, 0); r.Has(wire.FlagTracked) {
		t.Errorf("GET from %s, which does not own the key: tracked", other.name)
	}
	if r := get(owner, wire.FlagDirect); r.Has(wire.FlagTracked) {
		t.Error("direct GET: tracked")
	}

	// While a write of the key is in progress, a read may precede its Redis
	// write and the node may have missed its invalidation: not tracked.
	g := newGate(t)
	owner.setHook(wire.OpInvalidate, func(*nodeEvent) { g.wait() })
	done := e.putAsync(key, "w")
	eventually(t, "the write holds the key", func() bool { return e.shim.locks.waiters(key) > 0 })
	if r := get(e.owners(key)[1], 0); r.Has(wire.FlagTracked) {
		t.Error("GET during a write: tracked")
	}
	g.release()
	if r := receive(t, done); r.Status != wire.StatusOK {
		t.Fatalf("PUT: %s", r.Status)
	}
	eventually(t, "the write released the key", idle)

	// A Fenced owner is no longer tracked, and may not fetch.
	next, _, err := e.m.WithState(owner.name, partmap.Fenced)
	if err != nil {
		t.Fatal(err)
	}
	e.setMap(next)
	r := e.callFromWith(owner.ep, wire.Message{Header: wire.Header{Op: wire.OpGet}, Key: []byte(key)})
	if r.Has(wire.FlagTracked) {
		t.Error("GET from a Fenced owner: tracked")
	}
	if f := e.callFrom(owner.ep, wire.OpFetch, key, nil); f.Status != wire.StatusNotOwner {
		t.Errorf("FETCH from a Fenced owner: %s, want not_owner", f.Status)
	}
}

// TestFencedOwnerReleasedAfterLease checks that a write waits for a silent
// Fenced owner until the lease has run out since the shim learned it was
// fenced, and then completes without it.
func TestFencedOwnerReleasedAfterLease(t *testing.T) {
	const lease = 50 * time.Millisecond
	e := newEnv(t, withConfig(func(c *Config) { c.Lease, c.InvalidateTimeout = lease, patience }))
	key := e.key(0, "fenced")
	// A first write passes the start-up wait (TestFirstWriteWaitsOutTheLease).
	e.mustStatus(wire.OpPut, e.key(0, "first"), []byte("v"), wire.StatusOK)
	dead := e.owners(key)[0]
	dead.setSilent(true)
	next, _, err := e.m.WithState(dead.name, partmap.Fenced)
	if err != nil {
		t.Fatal(err)
	}
	fencedAt := time.Now() // before the shim installs the map
	e.setMap(next)
	r := e.mustStatus(wire.OpPut, key, []byte("v"), wire.StatusOK)
	if got := e.redisValue(key); got != "v" {
		t.Fatalf("Redis holds %q", got)
	}
	if st := e.shim.Stats(); st.Released != 1 || st.CoherenceFailures != 0 {
		t.Errorf("stats %+v: want the fenced owner released, no coherence failure", st)
	}
	dead.waitFor(t, wire.OpInvalidate, key, r.ValueVersion)
	// Versions are wall-clock nanoseconds taken when the write started, so
	// the write that had to wait for the release completed after it.
	if done := time.Now(); done.Sub(fencedAt) < lease {
		t.Errorf("the write completed %v after the owner was fenced, before the lease %v ran out", done.Sub(fencedAt), lease)
	}
}

// TestFirstWriteWaitsOutTheLease checks that a shim does not start a write
// until the serving lease has passed since it installed its first map: a
// node may still serve under an older map it cannot know.
func TestFirstWriteWaitsOutTheLease(t *testing.T) {
	e := newEnv(t, withConfig(func(c *Config) { c.Lease = 100 * time.Millisecond }))
	from := e.shim.view.Load().writesFrom
	r := e.mustStatus(wire.OpPut, e.key(0, "first"), []byte("v"), wire.StatusOK)
	if r.ValueVersion < uint64(from.UnixNano()) {
		t.Errorf("first write has version %d, taken before writes were allowed at %d", r.ValueVersion, from.UnixNano())
	}
	if later := time.Now(); later.Before(from) {
		t.Errorf("first write acknowledged at %v, before %v", later, from)
	}
}
