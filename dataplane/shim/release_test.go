package shim

import (
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/heldkeys"
	"github.com/distcache/distcache/dataplane/wire"
)

// TestReleaseTrimsTheHeldKey: an RMWRelease invalidates the key's copies,
// a copy found included, and takes the key out of the keys a cache may
// hold under a map that lets clients write the shard directly; the copies
// stay invalid and Redis' value is untouched. Without direct writes it
// answers "0" and the key stays held.
func TestReleaseTrimsTheHeldKey(t *testing.T) {
	tests := []struct {
		name         string
		directWrites bool
		want         string
		wantHeld     bool
		wantStatus   wire.Status // of the UPDATEs
	}{
		{name: "direct writes", directWrites: true, want: "1", wantHeld: false, wantStatus: wire.StatusUnavailable},
		{name: "no direct writes", want: "0", wantHeld: true, wantStatus: wire.StatusUncacheable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			m := e.m.Clone()
			m.Version++
			m.Storage.Racks[0].Shards[0].DirectWrites = tt.directWrites
			e.setMap(m)
			key := e.key(0, "release")
			owners := e.owners(key)
			e.mustStatus(wire.OpPut, key, []byte("v"), wire.StatusOK)
			if r := e.callFrom(owners[0].ep, wire.OpFetch, key, nil); r.Status != wire.StatusOK {
				t.Fatalf("FETCH: %s", r.Status)
			}
			owners[0].setHolds(key, true)
			r := e.mustStatus(wire.OpRMW, key, wire.AppendRMW(nil, wire.RMWRelease, nil), wire.StatusOK)
			if string(r.Value) != tt.want {
				t.Errorf("release answered %q, want %q", r.Value, tt.want)
			}
			wantHeldAndUpdate(t, e, owners[0], key, r.ValueVersion, tt.wantHeld, tt.wantStatus)
			if got := e.redisValue(key); got != "v" {
				t.Errorf("Redis holds %q after the release, want v", got)
			}
		})
	}
}

// TestReleasedKeyHeldBack: after a release, a FETCH of the key is
// answered StatusUncacheable and leaves the key out of the keys a cache
// may hold, until ReleaseHold has passed.
func TestReleasedKeyHeldBack(t *testing.T) {
	e := newEnv(t, withConfig(func(c *Config) { c.ReleaseHold = time.Hour }))
	m := e.m.Clone()
	m.Version++
	m.Storage.Racks[0].Shards[0].DirectWrites = true
	e.setMap(m)
	key := e.key(0, "heldback")
	owners := e.owners(key)
	e.mustStatus(wire.OpPut, key, []byte("v"), wire.StatusOK)
	if r := e.mustStatus(wire.OpRMW, key, wire.AppendRMW(nil, wire.RMWRelease, nil), wire.StatusOK); string(r.Value) != "1" {
		t.Fatalf("release answered %q", r.Value)
	}
	if r := e.callFrom(owners[0].ep, wire.OpFetch, key, nil); r.Status != wire.StatusUncacheable {
		t.Fatalf("FETCH of a released key: %s, want %s", r.Status, wire.StatusUncacheable)
	}
	if held, err := e.rdb.SIsMember(t.Context(), heldkeys.Key, key).Result(); err != nil || held {
		t.Fatalf("held %v (%v) after a FETCH of a released key", held, err)
	}
	other := e.key(0, "other")
	e.mustStatus(wire.OpPut, other, []byte("w"), wire.StatusOK)
	if r := e.callFrom(e.owners(other)[0].ep, wire.OpFetch, other, nil); r.Status != wire.StatusOK {
		t.Fatalf("FETCH of another key: %s", r.Status)
	}
}

// wantHeldAndUpdate checks that key is in the keys a cache may hold or
// not, as wantHeld says, and that owner's UPDATE of version v has status
// want.
func wantHeldAndUpdate(t *testing.T, e *env, owner *recordingNode, key string, v uint64, wantHeld bool, want wire.Status) {
	t.Helper()
	held, err := e.rdb.SIsMember(t.Context(), heldkeys.Key, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if held != wantHeld {
		t.Errorf("held %v, want %v", held, wantHeld)
	}
	eventually(t, "the UPDATE", func() bool { _, ok := owner.find(wire.OpUpdate, key, v); return ok })
	if ev, _ := owner.find(wire.OpUpdate, key, v); ev.status != want {
		t.Errorf("UPDATE %s, want %s", ev.status, want)
	}
}
