package shim

import (
	"fmt"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/internal/wiretest"
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
