package shim

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"

	"github.com/distcache/distcache/dataplane/heldkeys"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
)

func TestGet(t *testing.T) {
	e := newEnv(t, withShards(2))
	stored, missing, foreign := e.key(0, "stored"), e.key(0, "missing"), e.key(1, "foreign")
	if err := e.rdb.Set(context.Background(), stored, "value", 0).Err(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		op         wire.Op
		key        string
		value      []byte
		wantStatus wire.Status
		wantValue  string
	}{
		{name: "hit in Redis", op: wire.OpGet, key: stored, wantStatus: wire.StatusOK, wantValue: "value"},
		{name: "not found", op: wire.OpGet, key: missing, wantStatus: wire.StatusNotFound},
		{name: "GET of another shard", op: wire.OpGet, key: foreign, wantStatus: wire.StatusNotOwner},
		{name: "PUT of another shard", op: wire.OpPut, key: foreign, value: []byte("x"), wantStatus: wire.StatusNotOwner},
		{name: "DEL of another shard", op: wire.OpDel, key: foreign, wantStatus: wire.StatusNotOwner},
		{name: "FETCH of another shard", op: wire.OpFetch, key: foreign, wantStatus: wire.StatusNotOwner},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.call(tt.op, tt.key, tt.value)
			if r.Op != tt.op.Reply() || r.Status != tt.wantStatus || string(r.Value) != tt.wantValue {
				t.Fatalf("%s %q = %s %s %q, want %s %s %q", tt.op, tt.key, r.Op, r.Status, r.Value, tt.op.Reply(), tt.wantStatus, tt.wantValue)
			}
			if r.MapVersion != uint64(e.place.Version()) {
				t.Errorf("reply map version %d, want %d", r.MapVersion, e.place.Version())
			}
		})
	}
	st := e.shim.Stats()
	if st.Gets != 2 || st.GetMisses != 1 || st.NotOwner != 4 || st.Puts != 0 || st.Invalidations != 0 {
		t.Errorf("stats %+v: want 2 gets, 1 miss, 4 not-owner, no write", st)
	}
	if got := e.redisValue(foreign); got != "<nil>" {
		t.Errorf("a PUT refused with NotOwner reached Redis: %q", got)
	}
}

func TestFetch(t *testing.T) {
	e := newEnv(t)
	key, missing := e.key(0, "fetched"), e.key(0, "absent")
	put := e.mustStatus(wire.OpPut, key, []byte("hot"), wire.StatusOK)
	owners := e.owners(key)
	var nonOwner *recordingNode
	for name, n := range e.nodes {
		if !isOwnerNode(owners, n) && nonOwner == nil {
			nonOwner = e.nodes[name]
		}
	}
	missingOwner := e.owners(missing)[0]
	tests := []struct {
		name       string
		from       *transport.Endpoint
		key        string
		wantStatus wire.Status
		wantValue  string
	}{
		{name: "from the upper layer's owner", from: owners[0].ep, key: key, wantStatus: wire.StatusOK, wantValue: "hot"},
		{name: "from the lower layer's owner", from: owners[1].ep, key: key, wantStatus: wire.StatusOK, wantValue: "hot"},
		{name: "from a node that does not own the key", from: nonOwner.ep, key: key, wantStatus: wire.StatusNotOwner},
		{name: "from a client", from: e.client, key: key, wantStatus: wire.StatusNotOwner},
		{name: "of a missing key", from: missingOwner.ep, key: missing, wantStatus: wire.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.callFrom(tt.from, wire.OpFetch, tt.key, nil)
			if r.Op != wire.OpFetchReply || r.Status != tt.wantStatus || string(r.Value) != tt.wantValue {
				t.Fatalf("FETCH = %s %s %q, want FETCH_REPLY %s %q", r.Op, r.Status, r.Value, tt.wantStatus, tt.wantValue)
			}
			if tt.wantStatus == wire.StatusOK && r.ValueVersion < put.ValueVersion {
				t.Errorf("FETCH version %d below the acknowledged write's %d", r.ValueVersion, put.ValueVersion)
			}
			// A key not in storage comes with the counter, as a value does:
			// the node caches its absence at that version.
			if tt.wantStatus == wire.StatusNotFound && r.ValueVersion < put.ValueVersion {
				t.Errorf("FETCH of a missing key: version %d, want at least the last write's %d", r.ValueVersion, put.ValueVersion)
			}
		})
	}
	// A later write must get a version above every FETCH answered before.
	fetched := e.callFrom(owners[0].ep, wire.OpFetch, key, nil)
	next := e.mustStatus(wire.OpPut, key, []byte("hotter"), wire.StatusOK)
	if next.ValueVersion <= fetched.ValueVersion {
		t.Errorf("write after a FETCH has version %d, not above the FETCH's %d", next.ValueVersion, fetched.ValueVersion)
	}
}

// TestFetchMarksTheKeyHeld checks that a shim adds a key to the keys a
// cache may hold (package heldkeys) when it serves an owner's FETCH, of
// a value or of an absence, and when a write invalidates a node (whose
// phase 2 hands it the value), and not for a client's GET or a refused
// FETCH: direct writes of the key stop only once a cache may hold it.
func TestFetchMarksTheKeyHeld(t *testing.T) {
	e := newEnv(t)
	key, missing, written := e.key(0, "held"), e.key(0, "held-absent"), e.key(0, "held-written")
	if err := e.rdb.Set(t.Context(), key, "v", 0).Err(); err != nil { // in Redis, past the shim
		t.Fatal(err)
	}
	held := func(k string) bool {
		ok, err := e.rdb.SIsMember(t.Context(), heldkeys.Key, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	steps := []struct {
		name string
		from *transport.Endpoint
		op   wire.Op
		key  string
		want bool
	}{
		{name: "a client's GET", from: e.client, op: wire.OpGet, key: key},
		{name: "a client's FETCH, refused", from: e.client, op: wire.OpFetch, key: key},
		{name: "the owner's FETCH", from: e.owners(key)[0].ep, op: wire.OpFetch, key: key, want: true},
		{name: "the owner's FETCH of an absent key", from: e.owners(missing)[0].ep, op: wire.OpFetch, key: missing, want: true},
		// The nodes have not acknowledged a FLUSH: every write invalidates them.
		{name: "a write that invalidates the owners", from: e.client, op: wire.OpPut, key: written, want: true},
	}
	for _, st := range steps {
		e.callFrom(st.from, st.op, st.key, nil)
		if got := held(st.key); got != st.want {
			t.Fatalf("after %s: held %v, want %v", st.name, got, st.want)
		}
	}
}

func isOwnerNode(owners []*recordingNode, n *recordingNode) bool {
	for _, o := range owners {
		if o == n {
			return true
		}
	}
	return false
}

func TestMegabyteValue(t *testing.T) {
	e := newEnv(t)
	key := e.key(0, "big")
	value := make([]byte, wire.MaxValueLen)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range value {
		value[i] = byte(rng.Uint32())
	}
	put := e.mustStatus(wire.OpPut, key, value, wire.StatusOK)
	if got := e.redisValue(key); got != string(value) {
		t.Fatalf("Redis holds %d bytes, want the %d written", len(got), len(value))
	}
	get := e.mustStatus(wire.OpGet, key, nil, wire.StatusOK)
	if !bytes.Equal(get.Value, value) {
		t.Fatalf("GET returned %d bytes, not the %d-byte value written", len(get.Value), len(value))
	}
	fetch := e.callFrom(e.owners(key)[0].ep, wire.OpFetch, key, nil)
	if fetch.Status != wire.StatusOK || !bytes.Equal(fetch.Value, value) || fetch.ValueVersion < put.ValueVersion {
		t.Fatalf("FETCH = %s, %d bytes, version %d", fetch.Status, len(fetch.Value), fetch.ValueVersion)
	}
}

func TestMalformedDatagrams(t *testing.T) {
	e := newEnv(t)
	key := e.key(0, "after-garbage")
	good, err := wire.Encode(&wire.Message{Header: wire.Header{Op: wire.OpGet, Seq: 1}, Key: []byte(key)}, wire.DefaultDatagram)
	if err != nil {
		t.Fatal(err)
	}
	badMagic := bytes.Clone(good)
	badMagic[0] ^= 0xff
	badDigest := bytes.Clone(good)
	badDigest[20] ^= 0xff
	garbage := [][]byte{[]byte("garbage"), badMagic, badDigest, good[:wire.HeaderLen+1]}
	raw := newRawConn(t)
	before := e.shim.Stats().Transport.Malformed
	for _, b := range garbage {
		raw.send(e.shim.Addr(), b)
	}
	eventually(t, "malformed datagrams counted", func() bool {
		return e.shim.Stats().Transport.Malformed-before == uint64(len(garbage))
	})
	e.mustStatus(wire.OpPut, key, []byte("still serving"), wire.StatusOK)
	if r := e.mustStatus(wire.OpGet, key, nil, wire.StatusOK); string(r.Value) != "still serving" {
		t.Fatalf("GET after garbage = %q", r.Value)
	}
}

func TestPing(t *testing.T) {
	e := newEnv(t)
	r := e.call(wire.OpPing, "ping", nil)
	if r.Op != wire.OpPong || r.Status != wire.StatusOK {
		t.Fatalf("PING = %s %s, want PONG ok", r.Op, r.Status)
	}
}

func TestOverloaded(t *testing.T) {
	e := newEnv(t, withConfig(func(c *Config) { c.MaxInFlight = 1; c.InvalidateTimeout = patience }))
	key := e.key(0, "slot-holder")
	g := newGate(t)
	arrived := make(chan struct{}, 4)
	for _, n := range e.owners(key) {
		n.setHook(wire.OpInvalidate, func(*nodeEvent) { arrived <- struct{}{}; g.wait() })
	}
	done := e.putAsync(key, "v")
	receive(t, arrived) // the PUT holds the only slot until the gate opens
	e.mustStatus(wire.OpGet, e.key(0, "other"), nil, wire.StatusOverloaded)
	g.release()
	if r := receive(t, done); r.Status != wire.StatusOK {
		t.Fatalf("PUT holding the slot: %s", r.Status)
	}
	if st := e.shim.Stats(); st.Overloaded != 1 {
		t.Errorf("Overloaded = %d, want 1", st.Overloaded)
	}
	// Phase 2 runs in the PUT's slot too; once it ends the shim serves again.
	eventually(t, "the slot freed", func() bool { return len(e.shim.sem) == 0 })
	e.mustStatus(wire.OpGet, key, nil, wire.StatusOK)
}

// TestWriteTrimsTheHeldKey checks when a write takes its key out of the
// keys a cache may hold (package heldkeys): only under a map that lets
// clients write the shard directly, and only when every owner
// acknowledged the INVALIDATE without a copy; its phase 2 then carries no
// value. A write that found a copy keeps the key and updates the copy.
func TestWriteTrimsTheHeldKey(t *testing.T) {
	tests := []struct {
		name         string
		directWrites bool
		copyAt       bool // the first owner acknowledges with FlagHit
		wantHeld     bool
		wantStatus   wire.Status // of the UPDATEs
	}{
		{name: "no copy, direct writes", directWrites: true, wantHeld: false, wantStatus: wire.StatusUnavailable},
		{name: "a copy, direct writes", directWrites: true, copyAt: true, wantHeld: true, wantStatus: wire.StatusOK},
		{name: "no copy, no direct writes", wantHeld: true, wantStatus: wire.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			m := e.m.Clone()
			m.Version++
			m.Storage.Racks[0].Shards[0].DirectWrites = tt.directWrites
			e.setMap(m)
			key := e.key(0, "trim")
			owners := e.owners(key)
			if r := e.callFrom(owners[0].ep, wire.OpFetch, key, nil); r.Status != wire.StatusNotFound {
				t.Fatalf("FETCH: %s", r.Status)
			}
			owners[0].setHolds(key, tt.copyAt)
			put := e.mustStatus(wire.OpPut, key, []byte("v"), wire.StatusOK)
			wantHeldAndUpdate(t, e, owners[0], key, put.ValueVersion, tt.wantHeld, tt.wantStatus)
		})
	}
}
