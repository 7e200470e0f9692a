package shim

import (
	"testing"

	"github.com/distcache/distcache/dataplane/wire"
)

// TestRMW runs each read-modify-write at a shim whose key has cached
// copies: the reply carries the result, Redis holds the new value, and the
// write's phases reach the owners as a PUT's do — an INVALIDATE before the
// Redis update and an UPDATE with the key's new value after it (or
// not_found when the key does not exist).
func TestRMW(t *testing.T) {
	for _, tc := range []struct {
		name       string
		before     string // "" : the key does not exist
		op         wire.RMW
		arg        []byte
		wantStatus wire.Status
		wantResult string
		wantRedis  string // "<nil>": no key
	}{
		{"incrby a missing key", "", wire.RMWIncrBy, wire.IncrByArg(5), wire.StatusOK, "5", "5"},
		{"incrby a negative delta", "10", wire.RMWIncrBy, wire.IncrByArg(-12), wire.StatusOK, "-2", "-2"},
		{"incrby to 16 digits", "1234567890123450", wire.RMWIncrBy, wire.IncrByArg(1), wire.StatusOK, "1234567890123451", "1234567890123451"},
		{"incrby a string", "ten", wire.RMWIncrBy, wire.IncrByArg(1), wire.StatusInvalid, "", "ten"},
		{"incrby past int64", "9223372036854775807", wire.RMWIncrBy, wire.IncrByArg(1), wire.StatusInvalid, "", "9223372036854775807"},
		{"append", "ab", wire.RMWAppend, []byte("cd"), wire.StatusOK, "4", "abcd"},
		{"append to a missing key", "", wire.RMWAppend, []byte("x"), wire.StatusOK, "1", "x"},
		{"getset", "old", wire.RMWGetSet, []byte("new"), wire.StatusOK, "1old", "new"},
		{"getset of a missing key", "", wire.RMWGetSet, []byte("new"), wire.StatusOK, "0", "new"},
		{"setnx of a missing key", "", wire.RMWSetNX, []byte("v"), wire.StatusOK, "1", "v"},
		{"setnx of an existing key", "old", wire.RMWSetNX, []byte("v"), wire.StatusOK, "0", "old"},
		{"setxx of an existing key", "old", wire.RMWSetXX, []byte("v"), wire.StatusOK, "1", "v"},
		{"setxx of a missing key", "", wire.RMWSetXX, []byte("v"), wire.StatusOK, "0", "<nil>"},
		{"set nx get of an existing key", "old", wire.RMWSet, wire.SetArg(wire.SetNX, wire.SetGet, 0, []byte("v")), wire.StatusOK, "01old", "old"},
		{"set xx get", "old", wire.RMWSet, wire.SetArg(wire.SetXX, wire.SetGet, 0, []byte("v")), wire.StatusOK, "11old", "v"},
		{"set with an expiry", "old", wire.RMWSet, wire.SetArg(wire.SetAlways, 0, 60000, []byte("v")), wire.StatusOK, "1", "v"},
		{"set with an expiry of a missing key", "", wire.RMWSet, wire.SetArg(wire.SetAlways, 0, 60000, []byte("1")), wire.StatusOK, "1", "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			key := e.key(0, "rmw")
			if tc.before != "" {
				put := e.mustStatus(wire.OpPut, key, []byte(tc.before), wire.StatusOK)
				for _, n := range e.owners(key) {
					n.waitFor(t, wire.OpUpdate, key, put.ValueVersion)
				}
			}
			for _, n := range e.owners(key) {
				n.setHolds(key, true) // every owner holds a copy
				n.setHook(wire.OpInvalidate, func(ev *nodeEvent) { ev.redis = e.redisValue(ev.key) })
			}
			r := e.mustStatus(wire.OpRMW, key, wire.AppendRMW(nil, tc.op, tc.arg), tc.wantStatus)
			if r.Op != wire.OpRMWReply || string(r.Value) != tc.wantResult {
				t.Fatalf("reply %s %q, want RMW_REPLY %q", r.Op, r.Value, tc.wantResult)
			}
			if got := e.redisValue(key); got != tc.wantRedis {
				t.Errorf("Redis holds %q, want %q", got, tc.wantRedis)
			}
			for _, n := range e.owners(key) {
				invs := n.recorded(wire.OpInvalidate, key)
				if len(invs) == 0 || invs[len(invs)-1].redis != orNil(tc.before) {
					t.Errorf("owner %s: the RMW's INVALIDATE %+v, want one before Redis changed", n.name, invs)
					continue
				}
				up := n.waitFor(t, wire.OpUpdate, key, invs[len(invs)-1].version)
				switch {
				case tc.wantStatus != wire.StatusOK && up.status == wire.StatusOK:
					t.Errorf("owner %s: a refused RMW's UPDATE has status ok; the copy must stay invalid", n.name)
				case tc.wantStatus == wire.StatusOK && tc.wantRedis == "<nil>" && up.status != wire.StatusNotFound:
					t.Errorf("owner %s: UPDATE status %s, want not_found", n.name, up.status)
				case e.redisTTL(key) > 0 && (up.status != wire.StatusUncacheable || len(up.value) != 0):
					t.Errorf("owner %s: UPDATE %s %q of a key with an expiry, want uncacheable and no value", n.name, up.status, up.value)
				case e.redisTTL(key) > 0:
				case tc.wantStatus == wire.StatusOK && tc.wantRedis != "<nil>" && (up.status != wire.StatusOK || string(up.value) != tc.wantRedis):
					t.Errorf("owner %s: UPDATE %s %q, want the new value %q", n.name, up.status, up.value, tc.wantRedis)
				}
			}
		})
	}
}

// orNil is how redisValue shows v ("" : no key).
func orNil(v string) string {
	if v == "" {
		return "<nil>"
	}
	return v
}

// TestRMWAppliedOnce: a retransmitted INCRBY gets the stored reply, and
// one that reaches a restarted shim (which applied it before dying) gets
// the result the first run stored in Redis: the counter moves once.
func TestRMWAppliedOnce(t *testing.T) {
	e := newEnv(t)
	key := e.key(0, "counter")
	raw := newRawConn(t)
	dg := encodeWrite(t, wire.OpRMW, 11, key, string(wire.AppendRMW(nil, wire.RMWIncrBy, wire.IncrByArg(7))))
	raw.send(e.shim.Addr(), dg)
	if r := raw.receive(); r.Status != wire.StatusOK || string(r.Value) != "7" {
		t.Fatalf("INCRBY 7: %s %q", r.Status, r.Value)
	}
	raw.send(e.shim.Addr(), dg)
	if r := raw.receive(); r.Status != wire.StatusOK || string(r.Value) != "7" {
		t.Fatalf("retransmit: %s %q, want the stored reply 7", r.Status, r.Value)
	}
	e.restart()
	raw.send(e.shim.Addr(), dg)
	if r := raw.receive(); r.Status != wire.StatusOK || string(r.Value) != "7" {
		t.Fatalf("retransmit after a restart: %s %q, want the first run's result 7", r.Status, r.Value)
	}
	if got := e.redisValue(key); got != "7" {
		t.Fatalf("Redis holds %q after one INCRBY 7 sent three times", got)
	}
	if st := e.shim.Stats(); st.RMWs != 1 || st.AlreadyApplied != 1 {
		t.Errorf("restarted shim's stats %+v: want the RMW run once, as already applied", st)
	}
}

// TestFetchOfAKeyWithAnExpiry: the shim refuses to fill a cache with a key
// that has an expiry (a copy could outlive it), and fills it again once a
// plain write removed the expiry.
func TestFetchOfAKeyWithAnExpiry(t *testing.T) {
	e := newEnv(t)
	key := e.key(0, "expiring")
	e.mustStatus(wire.OpRMW, key, wire.AppendRMW(nil, wire.RMWSet, wire.SetArg(wire.SetAlways, 0, 60000, []byte("v"))), wire.StatusOK)
	owner := e.owners(key)[0]
	if r := e.callFrom(owner.ep, wire.OpFetch, key, nil); r.Status != wire.StatusUncacheable || len(r.Value) != 0 {
		t.Fatalf("FETCH of a key with an expiry: %s %q, want uncacheable", r.Status, r.Value)
	}
	e.mustStatus(wire.OpPut, key, []byte("w"), wire.StatusOK)
	if r := e.callFrom(owner.ep, wire.OpFetch, key, nil); r.Status != wire.StatusOK || string(r.Value) != "w" {
		t.Fatalf("FETCH after a plain write: %s %q, want the value", r.Status, r.Value)
	}
	if st := e.shim.Stats(); st.Uncacheable != 1 {
		t.Errorf("stats %+v: want 1 uncacheable fetch", st)
	}
}
