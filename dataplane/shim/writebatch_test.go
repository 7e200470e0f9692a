package shim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/internal/testing/wiretest"
)

// TestWritesOfOneBatchServedTogether queues PUTs in the shim's socket
// before it starts, so that its reader receives them in one batch: six of
// keys no node may hold, a second PUT of the first of them, one of a key a
// node fetched and one of a key whose lock is held. The six are applied
// together; the other three alone: the second PUT after the first, the
// fetched key's with its INVALIDATE, the locked key's once its lock is
// released. Every PUT is acknowledged and Redis holds the last values.
func TestWritesOfOneBatchServedTogether(t *testing.T) {
	const batched = 6
	e := newEnv(t, withoutStart(), withConfig(func(c *Config) { c.Transport.Readers = 1 })) // one reader: one receive batch
	for _, n := range e.nodes {
		e.shim.holders.markFlushed(n.ep.Addr(), 0) // as if every node had dropped the shard's entries
	}
	keys := make([]string, batched)
	for i := range keys {
		keys[i] = e.key(0, fmt.Sprintf("batch%d", i))
	}
	held, locked := e.key(0, "held"), e.key(0, "locked")
	holder := e.owners(held)[0]
	e.shim.holders.add(held, holder.ep.Addr())
	unlock, err := e.shim.locks.lock(t.Context(), locked)
	if err != nil {
		t.Fatal(err)
	}
	puts := append(append(keys, keys[0]), held, locked)
	values := map[string]string{}
	peer := wiretest.NewPeer(t)
	for i, k := range puts {
		values[k] = fmt.Sprintf("v%d", i)
		peer.Send(e.shim.Addr(), &wire.Message{Header: wire.Header{Op: wire.OpPut, Seq: uint64(i + 1)}, Key: []byte(k), Value: []byte(values[k])})
	}
	// Writes start a lease after the first map (waitWritable).
	eventually(t, "writes allowed", func() bool { return !time.Now().Before(e.shim.view.Load().writesFrom) })
	if err := e.shim.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[uint64]bool{}
	read := func() {
		rep := peer.Read(patience)
		if rep.Op != wire.OpPutReply || rep.Status != wire.StatusOK {
			t.Errorf("PUT %d: %s %s, want PUT_REPLY OK", rep.Seq, rep.Op, rep.Status)
		}
		acked[rep.Seq] = true
	}
	for range len(puts) - 1 {
		read()
	}
	if acked[uint64(len(puts))] {
		t.Fatal("the PUT of a locked key was acknowledged before its lock was released")
	}
	unlock()
	read()
	for k, v := range values {
		if got := e.redisValue(k); got != v {
			t.Errorf("Redis holds %q for %s, want %q", got, k, v)
		}
	}
	if s := e.shim.Stats(); s.Puts != uint64(len(puts)) || s.WriteBatches != 1 || s.BatchedWrites != batched {
		t.Errorf("stats: %d PUTs, %d batches of %d writes; want %d PUTs, 1 batch of %d", s.Puts, s.WriteBatches, s.BatchedWrites, len(puts), batched)
	}
	if got := holder.recorded(wire.OpInvalidate, held); len(got) != 1 {
		t.Errorf("the node that fetched %s got %d INVALIDATEs, want 1", held, len(got))
	}
	for _, k := range keys {
		for _, n := range e.nodes {
			if got := n.recorded(wire.OpInvalidate, k); len(got) != 0 {
				t.Errorf("node %s got an INVALIDATE of %s, which no node may hold", n.name, k)
			}
		}
	}
}

// TestFirstPutsOfOneBatchInOneTransaction queues the first datagrams of
// PUTs (wire.FlagFirst) of several keys, from one sender, before the shim
// starts: its reader receives them in one batch, and the shim writes them
// and their marks with one MSET and one BITFIELD in one transaction. A
// restarted shim then acknowledges a retransmission of one of them without
// applying it again after a later write.
func TestFirstPutsOfOneBatchInOneTransaction(t *testing.T) {
	const puts = 5
	e := newEnv(t, withoutStart(), withConfig(func(c *Config) { c.Transport.Readers = 1 }))
	for _, n := range e.nodes {
		e.shim.holders.markFlushed(n.ep.Addr(), 0)
	}
	keys := make([]string, puts)
	peer := wiretest.NewPeer(t)
	put := func(i int, flags wire.Flag) {
		peer.Send(e.shim.Addr(), &wire.Message{Header: wire.Header{Op: wire.OpPut, Flags: flags, Seq: uint64(100 + i)}, Key: []byte(keys[i]), Value: []byte(fmt.Sprintf("v%d", i))})
	}
	for i := range keys {
		keys[i] = e.key(0, fmt.Sprintf("first%d", i))
		put(i, wire.FlagFirst)
	}
	eventually(t, "writes allowed", func() bool { return !time.Now().Before(e.shim.view.Load().writesFrom) })
	if err := e.shim.Start(); err != nil {
		t.Fatal(err)
	}
	for range puts {
		if rep := peer.Read(patience); rep.Op != wire.OpPutReply || rep.Status != wire.StatusOK {
			t.Fatalf("PUT %d: %s %s, want PUT_REPLY OK", rep.Seq, rep.Op, rep.Status)
		}
	}
	stats, err := e.rdb.Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"cmdstat_mset:calls=1,", "cmdstat_bitfield:calls=1,", "cmdstat_exec:calls=1,"} {
		if !strings.Contains(stats, want) {
			t.Errorf("Redis commandstats %q: want %s", stats, want)
		}
	}
	for i, k := range keys {
		if got := e.redisValue(k); got != fmt.Sprintf("v%d", i) {
			t.Errorf("Redis holds %q for %s, want v%d", got, k, i)
		}
	}
	e.restart()
	e.mustStatus(wire.OpPut, keys[2], []byte("later"), wire.StatusOK)
	put(2, 0) // its retransmission reaches the restarted shim
	if rep := peer.Read(patience); rep.Status != wire.StatusOK || rep.Seq != 102 {
		t.Fatalf("retransmitted PUT: %s seq %d, want OK seq 102", rep.Status, rep.Seq)
	}
	if got := e.redisValue(keys[2]); got != "later" {
		t.Errorf("the retransmit was applied again: Redis holds %q, want the later write", got)
	}
	if st := e.shim.Stats(); st.AlreadyApplied != 1 {
		t.Errorf("stats %+v: want 1 write already applied", st)
	}
}

// TestRMWsOfOneBatchInOneScript queues read-modify-writes of several keys
// before the shim starts, so that its reader receives them in one batch:
// INCRs sent first (wire.FlagFirst), one of a key that holds no integer,
// an APPEND to a key of another type, one malformed. The well-formed ones
// run in one script, which looks up no marks for the first datagrams;
// each gets its own reply, and Redis's refusal of one leaves the others
// applied. A restarted
// shim answers a retransmission of one with the stored result without
// counting it again.
func TestRMWsOfOneBatchInOneScript(t *testing.T) {
	const incrs = 4
	e := newEnv(t, withoutStart(), withConfig(func(c *Config) { c.Transport.Readers = 1 }))
	for _, n := range e.nodes {
		e.shim.holders.markFlushed(n.ep.Addr(), 0)
	}
	text, hash, bad := e.key(0, "text"), e.key(0, "hash"), e.key(0, "malformed")
	if err := e.rdb.Set(t.Context(), text, "ten", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := e.rdb.HSet(t.Context(), hash, "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, incrs)
	peer := wiretest.NewPeer(t)
	rmw := func(seq uint64, key string, flags wire.Flag, op []byte) {
		peer.Send(e.shim.Addr(), &wire.Message{Header: wire.Header{Op: wire.OpRMW, Flags: flags, Seq: seq}, Key: []byte(key), Value: op})
	}
	incr := func(i int, flags wire.Flag) {
		rmw(uint64(100+i), keys[i], flags, wire.AppendRMW(nil, wire.RMWIncrBy, wire.IncrByArg(int64(i+1))))
	}
	for i := range keys {
		keys[i] = e.key(0, fmt.Sprintf("counter%d", i))
		incr(i, wire.FlagFirst)
	}
	rmw(200, text, wire.FlagFirst, wire.AppendRMW(nil, wire.RMWIncrBy, wire.IncrByArg(1)))
	rmw(201, bad, wire.FlagFirst, []byte{0xff})
	rmw(202, hash, wire.FlagFirst, wire.AppendRMW(nil, wire.RMWAppend, []byte("x")))
	eventually(t, "writes allowed", func() bool { return !time.Now().Before(e.shim.view.Load().writesFrom) })
	if err := e.shim.Start(); err != nil {
		t.Fatal(err)
	}
	want := map[uint64]string{200: wire.StatusInvalid.String(), 201: wire.StatusInternal.String(), 202: wire.StatusWrongType.String()}
	for i := range keys {
		want[uint64(100+i)] = fmt.Sprintf("%s %d", wire.StatusOK, i+1)
	}
	for range len(want) {
		rep := peer.Read(patience)
		got := rep.Status.String()
		if rep.Status == wire.StatusOK {
			got += " " + string(rep.Value)
		}
		if rep.Op != wire.OpRMWReply || got != want[rep.Seq] {
			t.Errorf("RMW %d: %s %s, want RMW_REPLY %s", rep.Seq, rep.Op, got, want[rep.Seq])
		}
	}
	stats, err := e.rdb.Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	// One GET per INCRBY reads its exact result (Lua's numbers are
	// doubles); a mark looked up would be one more GET and an HGET.
	if !strings.Contains(stats, "cmdstat_incrby:calls=5,") || !strings.Contains(stats, "cmdstat_get:calls=4,") ||
		strings.Contains(stats, "cmdstat_hget:") {
		t.Errorf("Redis commandstats %q: want 5 INCRBYs in the script, a GET of each result and no mark looked up", stats)
	}
	if s := e.shim.Stats(); s.WriteBatches != 1 || s.BatchedWrites != incrs+3 {
		t.Errorf("stats: %d batches of %d writes; want 1 batch of %d", s.WriteBatches, s.BatchedWrites, incrs+3)
	}
	e.restart()
	incr(2, 0) // its retransmission reaches the restarted shim
	if rep := peer.Read(patience); rep.Status != wire.StatusOK || string(rep.Value) != "3" {
		t.Fatalf("retransmitted INCR: %s %q, want OK 3", rep.Status, rep.Value)
	}
	if got := e.redisValue(keys[2]); got != "3" {
		t.Errorf("the retransmit was applied again: Redis holds %q, want 3", got)
	}
}
