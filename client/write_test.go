package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/peers"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/internal/testing/dnstest"
)

func TestWritesGoToTheKeysShim(t *testing.T) {
	cl := newCluster(t, withLayers(1), withShards(2, 2))
	c := newTestClient(t, cl.p)
	keys := make([]string, 40)
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%d", i)
		if err := c.Put(testCtx(t), keys[i], []byte("v-"+keys[i])); err != nil {
			t.Fatalf("Put %s: %v", keys[i], err)
		}
		if err := c.Delete(testCtx(t), keys[i]); err != nil {
			t.Fatalf("Delete %s: %v", keys[i], err)
		}
	}
	used := map[*fakeShim]bool{}
	for _, key := range keys {
		owner := cl.shimFor(key)
		used[owner] = true
		for _, row := range cl.shims {
			for _, s := range row {
				var ops []wire.Op // one per request: retransmissions share a seq
				seen := map[uint64]bool{}
				for _, r := range s.requests() {
					if r.key == key && !seen[r.seq] {
						seen[r.seq] = true
						ops = append(ops, r.op)
					}
				}
				want := []wire.Op(nil)
				if s == owner {
					want = []wire.Op{wire.OpPut, wire.OpDel}
				}
				if !slices.Equal(ops, want) {
					t.Errorf("shim %s got %v for %s, want %v", s.name, ops, key, want)
				}
			}
		}
	}
	if len(used) < 2 {
		t.Errorf("40 keys used %d of 4 shims; the test does not exercise placement", len(used))
	}
	if n := cl.nodes[0][0].requests(); n != 0 {
		t.Errorf("cache node got %d requests, want none", n)
	}
	if s := c.Stats(); s.Puts != 40 || s.Deletes != 40 || s.Errors != 0 || s.Retries != 0 {
		t.Errorf("stats %+v, want 40 puts, 40 deletes, no errors or retries", s)
	}
}

func TestWriteRetransmitKeepsSeq(t *testing.T) {
	tests := []struct {
		name  string
		op    wire.Op
		write func(c *Client, ctx context.Context) error
	}{
		{name: "put", op: wire.OpPut, write: func(c *Client, ctx context.Context) error { return c.Put(ctx, "k", []byte("v")) }},
		{name: "delete", op: wire.OpDel, write: func(c *Client, ctx context.Context) error { return c.Delete(ctx, "k") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := newCluster(t, withLayers(1))
			shim := cl.shimFor("k")
			shim.do(func(s *fakeShim) { s.dropWrites = 1 })
			c := newTestClient(t, cl.p)
			if err := tt.write(c, testCtx(t)); err != nil {
				t.Fatalf("write: %v", err)
			}
			rs := shim.requests()
			if len(rs) < 2 || !rs[0].dropped || rs[1].dropped {
				t.Fatalf("shim log %+v, want a dropped datagram then an answered one", rs)
			}
			for i, r := range rs {
				if r.op != tt.op || r.seq != rs[0].seq {
					t.Errorf("datagram %d: %s seq %d, want %s seq %d (the retransmission keeps the seq)", i, r.op, r.seq, tt.op, rs[0].seq)
				}
			}
			if s := c.Stats(); s.Transport.Retransmits == 0 || s.Retries != 0 {
				t.Errorf("stats %+v, want transport retransmits and no client retries", s)
			}
		})
	}
	t.Run("put stored", func(t *testing.T) {
		cl := newCluster(t, withLayers(1))
		cl.shimFor("k").do(func(s *fakeShim) { s.dropWrites = 1 })
		c := newTestClient(t, cl.p)
		if err := c.Put(testCtx(t), "k", []byte("v")); err != nil {
			t.Fatalf("Put: %v", err)
		}
		cl.shimFor("k").do(func(s *fakeShim) {
			if string(s.data["k"]) != "v" {
				t.Errorf("shim holds %q, want %q", s.data["k"], "v")
			}
		})
	})
}

func TestWriteCoherenceRetries(t *testing.T) {
	tests := []struct {
		op        wire.Op
		fails     int
		wantCalls int
		wantErr   error
	}{
		{op: wire.OpPut, fails: 0, wantCalls: 1},
		{op: wire.OpPut, fails: 1, wantCalls: 2},
		{op: wire.OpPut, fails: 2, wantCalls: 3},
		{op: wire.OpPut, fails: 3, wantCalls: 3, wantErr: ErrCoherence},
		{op: wire.OpPut, fails: 10, wantCalls: 3, wantErr: ErrCoherence},
		{op: wire.OpDel, fails: 2, wantCalls: 3},
		{op: wire.OpDel, fails: 3, wantCalls: 3, wantErr: ErrCoherence},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/fails=%d", tt.op, tt.fails), func(t *testing.T) {
			cl := newCluster(t, withLayers(1))
			shim := cl.shimFor("k")
			shim.do(func(s *fakeShim) { s.coherenceFails = tt.fails })
			c := newTestClient(t, cl.p, withAttempts(3))
			var err error
			if tt.op == wire.OpPut {
				err = c.Put(testCtx(t), "k", []byte("v"))
			} else {
				err = c.Delete(testCtx(t), "k")
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("write error = %v, want %v", err, tt.wantErr)
			}
			if got := distinctSeqs(shim.requests()); got != tt.wantCalls {
				t.Errorf("shim got %d distinct seqs, want %d (one new seq per retry)", got, tt.wantCalls)
			}
			s := c.Stats()
			wantErrors := uint64(0)
			if tt.wantErr != nil {
				wantErrors = 1
			}
			if s.Retries != uint64(tt.wantCalls-1) || s.Errors != wantErrors {
				t.Errorf("stats %+v, want %d retries and %d errors", s, tt.wantCalls-1, wantErrors)
			}
		})
	}
}

func TestWriteDeadlineOutcomeUnknown(t *testing.T) {
	tests := []struct {
		name  string
		write func(c *Client, ctx context.Context) error
	}{
		{name: "put", write: func(c *Client, ctx context.Context) error { return c.Put(ctx, "k", []byte("v")) }},
		{name: "delete", write: func(c *Client, ctx context.Context) error { return c.Delete(ctx, "k") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := newCluster(t, withLayers(1))
			shim := cl.shimFor("k")
			shim.do(func(s *fakeShim) { s.silent = true })
			c := newTestClient(t, cl.p)
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			err := tt.write(c, ctx)
			if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrOutcomeUnknown) {
				t.Fatalf("write error = %v, want one wrapping context.DeadlineExceeded and ErrOutcomeUnknown", err)
			}
			if !strings.Contains(err.Error(), "unknown") {
				t.Errorf("error %q does not say the outcome is unknown", err)
			}
			// Every datagram the shim got (wait for the first) is the same
			// request: never resent with a new seq.
			waitFor(t, "the write at the shim", func() bool { return len(shim.requests()) > 0 })
			if got := distinctSeqs(shim.requests()); got != 1 {
				t.Errorf("shim got %d distinct seqs, want 1", got)
			}
			if s := c.Stats(); s.Timeouts != 1 || s.Retries != 0 || s.Errors != 1 {
				t.Errorf("stats %+v, want 1 timeout, no retry, 1 error", s)
			}
		})
	}
}

func TestWriteExpiredContextSendsNothing(t *testing.T) {
	cl := newCluster(t, withLayers(1))
	c := newTestClient(t, cl.p)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Put(ctx, "k", []byte("v")); !errors.Is(err, context.Canceled) || errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("Put error = %v, want context.Canceled without an unknown outcome", err)
	}
	if n := len(cl.shimFor("k").requests()); n != 0 {
		t.Errorf("shim got %d datagrams, want 0", n)
	}
}

// TestNoRouteResolvesAgain: a write whose shard's DNS name has no record
// fails with ErrNoRoute without waiting; once the record exists, the next
// write resolves the map's names again on its own — with the periodic
// refresh off — and reaches the shim, as right after an install, when a
// shim's record appears after the client started.
func TestNoRouteResolvesAgain(t *testing.T) {
	cl := newCluster(t)
	dns := dnstest.Start(t)
	shim := cl.shims[0][0]
	const name = "test-rack-0-0.test.svc.example."
	m := cl.m.Clone()
	m.Storage.Racks[0].Shards[0].Address = name + ":" + strconv.Itoa(int(shim.ep.Addr().Port()))
	c := newTestClient(t, compile(t, m), func(c *Config) { c.Resolver, c.PeerRefresh = dns.Resolver(), -1 })
	clock := fakeClock(c)
	if err := c.Put(testCtx(t), "k", []byte("v")); !errors.Is(err, ErrNoRoute) {
		t.Fatalf("Put without a DNS record: %v, want ErrNoRoute", err)
	}
	dns.Set(name, "127.0.0.1")
	if err := c.Put(testCtx(t), "k", []byte("v")); !errors.Is(err, ErrNoRoute) {
		t.Fatalf("Put within %v of the last lookup: %v, want ErrNoRoute (lookups are rate-limited)", peers.MissRefreshEvery, err)
	}
	clock.Add(int64(peers.MissRefreshEvery))
	if err := c.Put(testCtx(t), "k", []byte("v")); err != nil {
		t.Fatalf("Put once the record exists: %v", err)
	}
	var stored string
	shim.do(func(s *fakeShim) { stored = string(s.data["k"]) })
	if stored != "v" {
		t.Fatalf("the shim holds %q, want v", stored)
	}
}
