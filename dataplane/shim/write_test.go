package shim

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/placement/partmap"
)

func TestPutTwoPhase(t *testing.T) {
	e := newEnv(t)
	key := e.key(0, "two-phase")
	if err := e.rdb.Set(context.Background(), key, "old", 0).Err(); err != nil {
		t.Fatal(err)
	}
	replied := newGate(t)
	for _, n := range e.nodes {
		n.setHook(wire.OpInvalidate, func(ev *nodeEvent) { ev.redis = e.redisValue(ev.key) })
		n.setHook(wire.OpUpdate, func(ev *nodeEvent) { replied.wait(); ev.redis = e.redisValue(ev.key) })
	}
	r := e.mustStatus(wire.OpPut, key, []byte("new"), wire.StatusOK)
	replied.release() // UPDATEs are acknowledged only after the client has its reply
	v := r.ValueVersion
	if v == 0 {
		t.Fatal("PUT_REPLY without a version")
	}
	owners := e.owners(key)
	if len(owners) != len(e.m.Layers) {
		t.Fatalf("%d owners for %d layers", len(owners), len(e.m.Layers))
	}
	for _, n := range owners {
		// Phase 1 completed before the reply: the INVALIDATE is recorded.
		inv, ok := n.find(wire.OpInvalidate, key, v)
		if !ok {
			t.Fatalf("owner %s: no INVALIDATE at version %d before the reply", n.name, v)
		}
		if inv.redis != "old" {
			t.Errorf("owner %s: Redis held %q during the invalidation, want the old value", n.name, inv.redis)
		}
		upd := n.waitFor(t, wire.OpUpdate, key, v)
		if string(upd.value) != "new" || upd.redis != "new" {
			t.Errorf("owner %s: UPDATE carries %q with Redis at %q, want the new value in both", n.name, upd.value, upd.redis)
		}
	}
	for _, n := range e.nodes {
		if !isOwnerNode(owners, n) && len(n.recorded(wire.OpInvalidate, key)) > 0 {
			t.Errorf("non-owner %s was invalidated", n.name)
		}
	}
	if got := e.redisValue(key); got != "new" {
		t.Errorf("Redis holds %q, want %q", got, "new")
	}
	eventually(t, "phase 2 counted", func() bool { return e.shim.Stats().UpdatesSent == 2 })
	if st := e.shim.Stats(); st.Puts != 1 || st.Invalidations != 2 || st.UpdateFailures != 0 || st.CoherenceFailures != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestDel(t *testing.T) {
	e := newEnv(t)
	key := e.key(0, "deleted")
	put := e.mustStatus(wire.OpPut, key, []byte("x"), wire.StatusOK)
	for _, n := range e.owners(key) {
		n.waitFor(t, wire.OpUpdate, key, put.ValueVersion)
		n.setHook(wire.OpInvalidate, func(ev *nodeEvent) { ev.redis = e.redisValue(ev.key) })
	}
	del := e.mustStatus(wire.OpDel, key, nil, wire.StatusOK)
	if del.Op != wire.OpDelReply || del.ValueVersion <= put.ValueVersion {
		t.Fatalf("DEL = %s version %d, want DEL_REPLY above %d", del.Op, del.ValueVersion, put.ValueVersion)
	}
	for _, n := range e.owners(key) {
		inv, ok := n.find(wire.OpInvalidate, key, del.ValueVersion)
		if !ok || inv.redis != "x" {
			t.Errorf("owner %s: INVALIDATE of the DEL recorded %v with Redis at %q, want before the delete", n.name, ok, inv.redis)
		}
	}
	if got := e.redisValue(key); got != "<nil>" {
		t.Errorf("Redis holds %q after DEL", got)
	}
	e.mustStatus(wire.OpGet, key, nil, wire.StatusNotFound)
	// Phase 2 of a DEL ends the write at the nodes: StatusNotFound, no value.
	for _, n := range e.owners(key) {
		if up := n.waitFor(t, wire.OpUpdate, key, del.ValueVersion); up.status != wire.StatusNotFound || len(up.value) != 0 {
			t.Errorf("owner %s: DEL's UPDATE has status %s and %d value bytes, want not_found and none", n.name, up.status, len(up.value))
		}
	}
	if st := e.shim.Stats(); st.Dels != 1 || st.UpdatesSent != 4 {
		t.Errorf("stats %+v: want 1 DEL and 2 updates for each write", st)
	}
}

func TestCoherenceFailure(t *testing.T) {
	tests := []struct {
		name   string
		silent []int // indexes into the key's owners
	}{
		{name: "upper owner never acks", silent: []int{0}},
		{name: "lower owner never acks", silent: []int{1}},
		{name: "no owner acks", silent: []int{0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, withConfig(func(c *Config) { c.InvalidateTimeout = 100 * time.Millisecond }))
			key := e.key(0, "incoherent")
			if err := e.rdb.Set(context.Background(), key, "old", 0).Err(); err != nil {
				t.Fatal(err)
			}
			owners := e.owners(key)
			for _, i := range tt.silent {
				owners[i].setSilent(true)
			}
			for _, op := range []wire.Op{wire.OpPut, wire.OpDel} {
				var value []byte
				if op == wire.OpPut {
					value = []byte("new")
				}
				r := e.mustStatus(op, key, value, wire.StatusCoherence)
				if r.ValueVersion != 0 {
					t.Errorf("%s refused with a version %d", op, r.ValueVersion)
				}
				if got := e.redisValue(key); got != "old" {
					t.Fatalf("%s refused but Redis holds %q", op, got)
				}
			}
			st := e.shim.Stats()
			if st.CoherenceFailures != 2 || st.UpdatesSent != 0 {
				t.Errorf("stats %+v: want 2 coherence failures, no update", st)
			}
			for _, i := range tt.silent {
				owners[i].setSilent(false)
			}
			e.mustStatus(wire.OpPut, key, []byte("new"), wire.StatusOK)
			if got := e.redisValue(key); got != "new" {
				t.Errorf("after recovery Redis holds %q", got)
			}
		})
	}
}

func TestPreviousMapOwners(t *testing.T) {
	tests := []struct {
		name      string
		grace     time.Duration
		lease     time.Duration
		wantOld   bool
		oldSilent bool // the failed member is dead: it must not block writes past the lease
	}{
		{name: "within grace", grace: 0 /* default 2m */, lease: testLease, wantOld: true},
		{name: "within grace, failed member dead", grace: 0, lease: testLease, wantOld: true, oldSilent: true},
		{name: "grace over", grace: time.Nanosecond, lease: time.Nanosecond, wantOld: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, withConfig(func(c *Config) {
				c.PrevMapGrace, c.Lease, c.InvalidateTimeout = tt.grace, tt.lease, patience
			}))
			key := e.key(0, "moved")
			old := e.nodes[e.m.Layers[0].Members[e.place.Owner(0, key)].Name]
			old.setSilent(tt.oldSilent)
			next, changed, err := e.m.WithState(old.name, partmap.Failed)
			if err != nil || !changed {
				t.Fatalf("WithState: %v %v", changed, err)
			}
			e.setMap(next)
			owners := e.owners(key)
			if isOwnerNode(owners, old) {
				t.Fatal("the failed member still owns the key")
			}
			r := e.mustStatus(wire.OpPut, key, []byte("v"), wire.StatusOK)
			for _, n := range owners {
				if _, ok := n.find(wire.OpInvalidate, key, r.ValueVersion); !ok {
					t.Errorf("current owner %s not invalidated", n.name)
				}
			}
			// The failed previous owner is invalidated; the write waits for
			// it only until the serving lease has run out since it failed.
			if tt.wantOld {
				old.waitFor(t, wire.OpInvalidate, key, r.ValueVersion)
			} else if _, ok := old.find(wire.OpInvalidate, key, r.ValueVersion); ok {
				t.Errorf("previous owner %s invalidated after the grace period", old.name)
			}
			want := uint64(len(owners))
			if tt.wantOld {
				want++
			}
			if st := e.shim.Stats(); st.Invalidations != want || st.MapVersion != next.Version {
				t.Errorf("stats %+v: want %d invalidations, map version %d", st, want, next.Version)
			}
			// The previous owner is no longer allowed to fill a copy.
			if f := e.callFrom(old.ep, wire.OpFetch, key, nil); f.Status != wire.StatusNotOwner {
				t.Errorf("FETCH from the previous owner: %s, want not_owner", f.Status)
			}
		})
	}
}

func TestWritesSerialisedPerKey(t *testing.T) {
	e := newEnv(t, withConfig(func(c *Config) { c.InvalidateTimeout = patience }))
	key := e.key(0, "contended")
	if err := e.rdb.Set(context.Background(), key, "old", 0).Err(); err != nil {
		t.Fatal(err)
	}
	g := newGate(t)
	arrived := make(chan nodeEvent, 64)
	owners := e.owners(key)
	for _, n := range owners {
		n.setHook(wire.OpInvalidate, func(ev *nodeEvent) {
			ev.redis = e.redisValue(ev.key)
			arrived <- *ev
			g.wait()
		})
	}
	doneA := e.putAsync(key, "a")
	first := receive(t, arrived) // A is in phase 1, blocked at a node
	doneB := e.putAsync(key, "b")
	eventually(t, "the second PUT waiting for the key's lock", func() bool { return e.shim.locks.waiters(key) == 2 })
	for len(arrived) > 0 {
		if ev := <-arrived; ev.version != first.version {
			t.Fatalf("INVALIDATE at version %d sent while the write at %d was in phase 1", ev.version, first.version)
		}
	}
	g.release()
	ra, rb := receive(t, doneA), receive(t, doneB)
	if ra.Status != wire.StatusOK || rb.Status != wire.StatusOK {
		t.Fatalf("PUTs: %s, %s", ra.Status, rb.Status)
	}
	if ra.ValueVersion != first.version || rb.ValueVersion <= ra.ValueVersion {
		t.Fatalf("versions A=%d B=%d, first invalidation at %d", ra.ValueVersion, rb.ValueVersion, first.version)
	}
	for _, n := range owners {
		invs := n.recorded(wire.OpInvalidate, key)
		if len(invs) != 2 || invs[0].version != ra.ValueVersion || invs[1].version != rb.ValueVersion {
			t.Fatalf("owner %s: invalidations %+v, want A's then B's", n.name, invs)
		}
		if invs[0].redis != "old" || invs[1].redis != "a" {
			t.Errorf("owner %s: Redis held %q at A's and %q at B's invalidation, want old then A's value", n.name, invs[0].redis, invs[1].redis)
		}
	}
	if got := e.redisValue(key); got != "b" {
		t.Errorf("Redis holds %q, want the later write", got)
	}
}

func TestConcurrentWritesLinearizable(t *testing.T) {
	e := newEnv(t)
	key := e.key(0, "linearizable")
	const writers, writes = 4, 25
	type result struct {
		version uint64
		value   string
		err     error
	}
	results := make(chan result, writers*writes)
	for w := range writers {
		go func() {
			for i := range writes {
				value := fmt.Sprintf("w%d-%d", w, i)
				r, err := e.tryCall(e.client, wire.OpPut, key, []byte(value))
				if err == nil && r.Status != wire.StatusOK {
					err = fmt.Errorf("status %s", r.Status)
				}
				results <- result{r.ValueVersion, value, err}
			}
		}()
	}
	versions := map[uint64]string{}
	var last result
	for range writers * writes {
		r := receive(t, results)
		if r.err != nil {
			t.Fatalf("PUT %s: %v", r.value, r.err)
		}
		if _, dup := versions[r.version]; dup {
			t.Fatalf("version %d acknowledged twice", r.version)
		}
		versions[r.version] = r.value
		if r.version > last.version {
			last = r
		}
	}
	if got := e.redisValue(key); got != last.value {
		t.Errorf("Redis holds %q, want %q, the write with the highest version", got, last.value)
	}
	for _, n := range e.owners(key) {
		var vs []uint64
		for _, ev := range n.recorded(wire.OpInvalidate, key) {
			vs = append(vs, ev.version)
		}
		if len(vs) != writers*writes || !slices.IsSorted(vs) {
			t.Errorf("owner %s: %d invalidations, sorted %v; want %d in version order", n.name, len(vs), slices.IsSorted(vs), writers*writes)
		}
	}
}

func TestDuplicateWrites(t *testing.T) {
	t.Run("retransmit of a completed write", func(t *testing.T) {
		e := newEnv(t)
		key := e.key(0, "dup-done")
		raw := newRawConn(t)
		dg := encodePut(t, 42, key, "first")
		raw.send(e.shim.Addr(), dg)
		r1 := raw.receive()
		if r1.Status != wire.StatusOK || r1.Seq != 42 {
			t.Fatalf("first PUT: %s seq %d", r1.Status, r1.Seq)
		}
		later := e.mustStatus(wire.OpPut, key, []byte("second"), wire.StatusOK)
		raw.send(e.shim.Addr(), dg) // the same datagram again, as a retransmit
		r2 := raw.receive()
		if r2.Status != wire.StatusOK || r2.Seq != 42 || r2.ValueVersion != r1.ValueVersion {
			t.Fatalf("retransmit answered %s seq %d version %d, want the stored reply (version %d)", r2.Status, r2.Seq, r2.ValueVersion, r1.ValueVersion)
		}
		if got := e.redisValue(key); got != "second" {
			t.Fatalf("the retransmit was executed again: Redis holds %q, want the later write", got)
		}
		for _, n := range e.owners(key) {
			if invs := n.recorded(wire.OpInvalidate, key); len(invs) != 2 || invs[1].version != later.ValueVersion {
				t.Errorf("owner %s: %d invalidations, want 2", n.name, len(invs))
			}
		}
		if st := e.shim.Stats(); st.Puts != 2 || st.DuplicateRequests != 1 {
			t.Errorf("stats %+v: want 2 PUTs executed, 1 duplicate", st)
		}
	})
	t.Run("retransmit of a write a previous run of the shim applied", func(t *testing.T) {
		e := newEnv(t)
		key := e.key(0, "dup-restart")
		raw := newRawConn(t)
		dg := encodePut(t, 42, key, "first")
		raw.send(e.shim.Addr(), dg)
		if r := raw.receive(); r.Status != wire.StatusOK { // as if it died before this reply went out
			t.Fatalf("first PUT: %s", r.Status)
		}
		e.restart()
		later := e.mustStatus(wire.OpPut, key, []byte("second"), wire.StatusOK)
		raw.send(e.shim.Addr(), dg) // the client's retransmit reaches the new shim
		r := raw.receive()
		if r.Status != wire.StatusOK || r.Seq != 42 || r.ValueVersion <= later.ValueVersion {
			t.Fatalf("retransmit answered %s seq %d version %d, want an acknowledgement after version %d", r.Status, r.Seq, r.ValueVersion, later.ValueVersion)
		}
		if got := e.redisValue(key); got != "second" {
			t.Fatalf("the retransmit was applied again: Redis holds %q, want the later write", got)
		}
		for _, n := range e.owners(key) {
			if up := n.waitFor(t, wire.OpUpdate, key, r.ValueVersion); up.status == wire.StatusOK || len(up.value) != 0 {
				t.Errorf("owner %s: the retransmit's phase 2 %+v, want it ended without a value", n.name, up)
			}
		}
		if st := e.shim.Stats(); st.AlreadyApplied != 1 {
			t.Errorf("stats %+v: want 1 write already applied", st)
		}
	})
	t.Run("retransmit of a write in progress", func(t *testing.T) {
		e := newEnv(t, withConfig(func(c *Config) { c.InvalidateTimeout = patience }))
		key := e.key(0, "dup-running")
		g := newGate(t)
		arrived := make(chan struct{}, 64)
		for _, n := range e.owners(key) {
			n.setHook(wire.OpInvalidate, func(*nodeEvent) { arrived <- struct{}{}; g.wait() })
		}
		raw := newRawConn(t)
		dg := encodePut(t, 7, key, "once")
		raw.send(e.shim.Addr(), dg)
		receive(t, arrived)
		raw.send(e.shim.Addr(), dg)
		eventually(t, "the duplicate counted", func() bool { return e.shim.Stats().DuplicateRequests == 1 })
		g.release()
		r1 := raw.receive()
		raw.send(e.shim.Addr(), dg)
		r2 := raw.receive()
		if r1.Status != wire.StatusOK || r2.Status != wire.StatusOK || r1.ValueVersion != r2.ValueVersion {
			t.Fatalf("replies %s v%d and %s v%d, want the same reply", r1.Status, r1.ValueVersion, r2.Status, r2.ValueVersion)
		}
		if st := e.shim.Stats(); st.Puts != 1 || st.DuplicateRequests != 2 || st.Invalidations != 2 {
			t.Errorf("stats %+v: want 1 PUT executed (2 invalidations), 2 duplicates", st)
		}
	})
}

// TestDelReportsWhetherTheKeyExisted: a DEL_REPLY carries FlagHit when the
// deleted key existed (Redis DEL's count), and a retransmitted DEL that a
// previous run of the shim applied gets the outcome that run found, not
// "missing".
func TestDelReportsWhetherTheKeyExisted(t *testing.T) {
	e := newEnv(t)
	key := e.key(0, "counted")
	e.mustStatus(wire.OpPut, key, []byte("x"), wire.StatusOK)
	if del := e.mustStatus(wire.OpDel, key, nil, wire.StatusOK); !del.Has(wire.FlagHit) {
		t.Errorf("DEL of an existing key: flags %v, want FlagHit", del.Flags)
	}
	if del := e.mustStatus(wire.OpDel, key, nil, wire.StatusOK); del.Has(wire.FlagHit) {
		t.Errorf("DEL of a missing key: flags %v, want no FlagHit", del.Flags)
	}
	e.mustStatus(wire.OpPut, key, []byte("y"), wire.StatusOK)
	raw := newRawConn(t)
	dg := encodeWrite(t, wire.OpDel, 9, key, "")
	raw.send(e.shim.Addr(), dg)
	if r := raw.receive(); r.Status != wire.StatusOK || !r.Has(wire.FlagHit) {
		t.Fatalf("first DEL: %s flags %v", r.Status, r.Flags)
	}
	e.restart()
	raw.send(e.shim.Addr(), dg) // the retransmit reaches the new shim, the key long gone
	if r := raw.receive(); r.Status != wire.StatusOK || !r.Has(wire.FlagHit) {
		t.Errorf("retransmitted DEL after a restart: %s flags %v, want OK with FlagHit as first found", r.Status, r.Flags)
	}
}

func encodePut(t *testing.T, seq uint64, key, value string) []byte {
	return encodeWrite(t, wire.OpPut, seq, key, value)
}

func encodeWrite(t *testing.T, op wire.Op, seq uint64, key, value string) []byte {
	t.Helper()
	b, err := wire.Encode(&wire.Message{Header: wire.Header{Op: op, Seq: seq}, Key: []byte(key), Value: []byte(value)}, wire.DefaultDatagram)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
