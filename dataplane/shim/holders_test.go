package shim

import (
	"testing"

	"github.com/distcache/distcache/dataplane/wire"
)

// flushAll makes every node of e acknowledge FLUSH and waits until the
// shim has counted want more acknowledgements than before.
func (e *env) flushAll(want uint64) {
	e.t.Helper()
	before := e.shim.Stats().Flushes
	for _, n := range e.nodes {
		n.setFlushes(true)
	}
	e.shim.holders.wake()
	eventually(e.t, "every node flushed", func() bool { return e.shim.Stats().Flushes >= before+want })
}

// TestDirectoryOfCopies checks the shim's directory (holders.go): once the
// nodes have flushed the shard, a write of a key no node fetched sends no
// coherence message; a node that fetched the key, or never acknowledged a
// FLUSH, is invalidated and updated as before.
func TestDirectoryOfCopies(t *testing.T) {
	tests := []struct {
		name        string
		flushed     []bool // by owner: acknowledges FLUSH
		fetchedBy   int    // owner that FETCHes the key before the write; -1: none
		invalidated []bool // by owner
	}{
		{name: "no copy anywhere", flushed: []bool{true, true}, fetchedBy: -1, invalidated: []bool{false, false}},
		{name: "fetched by one owner", flushed: []bool{true, true}, fetchedBy: 1, invalidated: []bool{false, true}},
		{name: "an owner never flushed", flushed: []bool{false, true}, fetchedBy: -1, invalidated: []bool{true, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			key := e.key(0, "dir")
			owners := e.owners(key)
			flushing := 0
			for i, o := range owners {
				if !tt.flushed[i] {
					continue
				}
				o.setFlushes(true)
				flushing++
			}
			for _, n := range e.nodes { // the other members flush too
				if !containsNode(owners, n) {
					n.setFlushes(true)
					flushing++
				}
			}
			e.shim.holders.wake()
			eventually(t, "the nodes flushed", func() bool { return e.shim.Stats().Flushes >= uint64(flushing) })
			if err := e.rdb.Set(t.Context(), key, "v0", 0).Err(); err != nil {
				t.Fatal(err)
			}
			if tt.fetchedBy >= 0 {
				if r := e.callFrom(owners[tt.fetchedBy].ep, wire.OpFetch, key, nil); r.Status != wire.StatusOK {
					t.Fatalf("FETCH: %s", r.Status)
				}
			}
			put := e.mustStatus(wire.OpPut, key, []byte("v1"), wire.StatusOK)
			if got := e.redisValue(key); got != "v1" {
				t.Fatalf("Redis holds %q, want v1", got)
			}
			skipped := 0
			for i, o := range owners {
				_, inv := o.find(wire.OpInvalidate, key, put.ValueVersion)
				if inv != tt.invalidated[i] {
					t.Errorf("owner %d (%s): invalidated %v, want %v", i, o.name, inv, tt.invalidated[i])
				}
				if !tt.invalidated[i] {
					skipped++
					if len(o.recorded(wire.OpUpdate, key)) != 0 {
						t.Errorf("owner %d (%s) got an UPDATE for a key it cannot hold", i, o.name)
					}
				}
			}
			if s := e.shim.Stats(); s.Skipped != uint64(skipped) {
				t.Errorf("Skipped %d, want %d", s.Skipped, skipped)
			}
		})
	}
}

func containsNode(ns []*recordingNode, n *recordingNode) bool {
	for _, o := range ns {
		if o == n {
			return true
		}
	}
	return false
}

// TestDirectoryFullFlushesAgain fills a directory of one key: the second
// key clears it, every node must acknowledge a FLUSH again, and until then
// writes invalidate every owner, a key fetched before the clear included.
func TestDirectoryFullFlushesAgain(t *testing.T) {
	e := newEnv(t, withConfig(func(c *Config) { c.HolderKeys = 1 }))
	a, b := e.key(0, "full-a"), e.key(0, "full-b")
	for _, n := range e.nodes {
		n.setFlushes(false)
	}
	e.flushAll(uint64(len(e.nodes)))
	for _, n := range e.nodes {
		n.setFlushes(false) // the next FLUSH goes unanswered
	}
	if r := e.callFrom(e.owners(a)[0].ep, wire.OpFetch, a, nil); r.Status != wire.StatusNotFound {
		t.Fatalf("FETCH %s: %s", a, r.Status)
	}
	if r := e.callFrom(e.owners(b)[0].ep, wire.OpFetch, b, nil); r.Status != wire.StatusNotFound {
		t.Fatalf("FETCH %s: %s", b, r.Status)
	}
	put := e.mustStatus(wire.OpPut, a, []byte("v"), wire.StatusOK)
	for _, o := range e.owners(a) {
		if _, ok := o.find(wire.OpInvalidate, a, put.ValueVersion); !ok {
			t.Errorf("owner %s not invalidated after the directory was cleared", o.name)
		}
	}
	if s := e.shim.Stats(); s.HolderKeys != 1 {
		t.Errorf("HolderKeys %d, want 1 (b)", s.HolderKeys)
	}
}

// TestInvalidatedNodeStaysListed checks that a node that acknowledged a
// write's INVALIDATE is listed for the key: after it acknowledges a FLUSH,
// the key's next write still invalidates and updates it, so that the
// readers parked on the first write at the node are released by the
// second's phase 2, not by the first's late one.
func TestInvalidatedNodeStaysListed(t *testing.T) {
	e := newEnv(t)
	key := e.key(0, "listed")
	for _, n := range e.nodes {
		n.setFlushes(false)
	}
	first := e.mustStatus(wire.OpPut, key, []byte("v1"), wire.StatusOK)
	for _, o := range e.owners(key) {
		if _, ok := o.find(wire.OpInvalidate, key, first.ValueVersion); !ok {
			t.Fatalf("owner %s not invalidated before any FLUSH", o.name)
		}
	}
	e.flushAll(uint64(len(e.nodes)))
	second := e.mustStatus(wire.OpPut, key, []byte("v2"), wire.StatusOK)
	for _, o := range e.owners(key) {
		if _, ok := o.find(wire.OpInvalidate, key, second.ValueVersion); !ok {
			t.Errorf("owner %s, invalidated by the first write, skipped by the second after its FLUSH", o.name)
		}
	}
}
