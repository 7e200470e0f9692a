package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/wire"
)

func withBypass() clientOpt { return func(c *Config) { c.Bypass = true } }

// TestBypassReadsGoToTheShim checks the NoCache baseline: every read, found
// or not, retried or not, goes to the key's shim with FlagDirect and never
// to a cache node; writes still go to the shim as usual.
func TestBypassReadsGoToTheShim(t *testing.T) {
	tests := []struct {
		name       string
		stored     bool
		silentShim bool
		wantErr    error
		wantShim   int // GETs each read sends to the shim
	}{
		{name: "found", stored: true, wantShim: 1},
		{name: "not found", wantErr: ErrNotFound, wantShim: 1},
		{name: "shim silent: every attempt at the shim", silentShim: true, wantErr: context.DeadlineExceeded, wantShim: DefaultAttempts},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := newCluster(t, withShards(2, 2), withNodesPerLayer(2))
			for _, row := range cl.nodes {
				for _, n := range row {
					// Idle, cached, answering nodes: a routed read would
					// pick one of them.
					n.set(nodeLoad(0))
				}
			}
			// A silent shim is waited for 50 ms an attempt; an answering
			// one long enough that a slow machine never retries it.
			timeout := 10 * time.Second
			if tt.silentShim {
				timeout = 50 * time.Millisecond
			}
			c := newTestClient(t, cl.p, withBypass(), withAttemptTimeout(timeout))
			const reads = 6
			for i := range reads {
				key := fmt.Sprintf("k%d", i)
				if tt.stored {
					cl.store(key, "stored-"+key)
				}
				sh := cl.shimFor(key)
				sh.do(func(s *fakeShim) { s.silent = tt.silentShim })
				r, err := c.GetResult(noDeadline(t), key)
				if (tt.wantErr == nil) != (err == nil) || !errors.Is(err, tt.wantErr) {
					t.Fatalf("Get %s: error %v, want %v", key, err, tt.wantErr)
				}
				if err == nil && (r.Layer != -1 || r.Hit || string(r.Value) != "stored-"+key) {
					t.Fatalf("Get %s = %+v, want the shim's value", key, r)
				}
				// This key's GETs only: a retransmission of the previous
				// key's may reach the shim late. The shim may also read
				// this key's last GET only after the read gave up on it.
				var got []shimRequest
				waitFor(t, "the shim received the read's GETs", func() bool {
					got = requestsFor(sh.requests(), key)
					return distinctSeqs(got) >= tt.wantShim
				})
				if distinctSeqs(got) != tt.wantShim {
					t.Fatalf("Get %s: shim got %d GETs, want %d", key, distinctSeqs(got), tt.wantShim)
				}
				for _, req := range got {
					if req.op != wire.OpGet || req.flags&wire.FlagDirect == 0 {
						t.Fatalf("Get %s: shim got %s flags %#x, want GET with FlagDirect", key, req.op, req.flags)
					}
				}
			}
			for l, row := range cl.nodes {
				for i, n := range row {
					if got := n.requests(); got != 0 {
						t.Errorf("node %d/%d got %d GETs, want none", l, i, got)
					}
				}
			}
			s := c.Stats()
			if s.DirectReads != uint64(reads*tt.wantShim) || s.Hits != 0 || s.Ties != 0 {
				t.Errorf("stats %+v: want %d direct reads, no hits, no routing", s, reads*tt.wantShim)
			}
		})
	}
}

func TestBypassWritesUnchanged(t *testing.T) {
	cl := newCluster(t)
	c := newTestClient(t, cl.p, withBypass())
	if err := c.Put(testCtx(t), "k", []byte("v")); err != nil {
		t.Fatalf("Put: %v", err)
	}
	if v, err := c.Get(testCtx(t), "k"); err != nil || string(v) != "v" {
		t.Fatalf("Get after Put = %q, %v; want the written value", v, err)
	}
	if err := c.Delete(testCtx(t), "k"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := c.Get(testCtx(t), "k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after Delete: %v, want ErrNotFound", err)
	}
	var ops []wire.Op // one per request: a retransmission (same seq) under load is the same request
	seen := map[uint64]bool{}
	for _, r := range cl.shimFor("k").requests() {
		if !seen[r.seq] {
			seen[r.seq] = true
			ops = append(ops, r.op)
		}
	}
	want := []wire.Op{wire.OpPut, wire.OpGet, wire.OpDel, wire.OpGet}
	if !slices.Equal(ops, want) {
		t.Fatalf("shim got %v, want %v", ops, want)
	}
	if s := c.Stats(); s.Puts != 1 || s.Deletes != 1 || s.DirectReads != 2 {
		t.Errorf("stats %+v, want 1 put, 1 delete, 2 direct reads", s)
	}
}

// requestsFor is the requests of rs for key.
func requestsFor(rs []shimRequest, key string) []shimRequest {
	return slices.DeleteFunc(rs, func(r shimRequest) bool { return r.key != key })
}
