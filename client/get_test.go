package client

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/distcache/distcache/dataplane/wire"
)

// warmUp reads until both nodes of a two-layer cluster have answered once,
// so the client has seen both loads.
func warmUp(t *testing.T, c *Client, cl *cluster, key string) {
	t.Helper()
	a, b := cl.nodes[0][0], cl.nodes[1][0]
	for i := 0; i < 100 && (a.requests() == 0 || b.requests() == 0); i++ {
		if _, err := c.Get(testCtx(t), key); err != nil {
			t.Fatalf("warm-up Get: %v", err)
		}
	}
	if a.requests() == 0 || b.requests() == 0 {
		t.Fatalf("warm-up did not reach both nodes: %d and %d GETs", a.requests(), b.requests())
	}
}

func TestGetPrefersLessLoadedCandidate(t *testing.T) {
	tests := []struct {
		name       string
		loads      [2]uint32
		capacities [2]float64
		want       int // layer that must receive the reads
	}{
		{name: "layer 0 heavily loaded", loads: [2]uint32{1000, 10}, want: 1},
		{name: "layer 1 heavily loaded", loads: [2]uint32{10, 1000}, want: 0},
		{name: "capacity normalises the load", loads: [2]uint32{50, 10}, capacities: [2]float64{10, 1}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := newCluster(t, withCapacity(0, tt.capacities[0]), withCapacity(1, tt.capacities[1]))
			for l := range 2 {
				cl.nodes[l][0].set(nodeLoad(tt.loads[l]))
			}
			c := newTestClient(t, cl.p)
			warmUp(t, c, cl, "k")
			win, lose := cl.nodes[tt.want][0], cl.nodes[1-tt.want][0]
			before, loseBefore := win.requests(), lose.requests()
			const n = 50
			for range n {
				r, err := c.GetResult(testCtx(t), "k")
				if err != nil {
					t.Fatalf("Get: %v", err)
				}
				if r.Layer != tt.want || r.Node != win.id || !r.Hit {
					t.Fatalf("Get answered by layer %d node %d (hit %v), want layer %d node %d", r.Layer, r.Node, r.Hit, tt.want, win.id)
				}
			}
			if got := win.requests() - before; got != n {
				t.Errorf("less-loaded node got %d GETs, want %d", got, n)
			}
			if got := lose.requests() - loseBefore; got != 0 {
				t.Errorf("loaded node got %d GETs, want 0", got)
			}
		})
	}
}

func TestGetTieUsesBothCandidates(t *testing.T) {
	tests := []struct {
		name  string
		loads [2]uint32
	}{
		{name: "no telemetry", loads: [2]uint32{0, 0}},
		{name: "equal loads", loads: [2]uint32{7, 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := newCluster(t)
			for l := range 2 {
				if tt.loads[l] > 0 {
					cl.nodes[l][0].set(nodeLoad(tt.loads[l]))
				}
			}
			// No hedging: on a loaded machine a slow read would also ask
			// the other candidate, which is not the tie-break under test.
			c := newTestClient(t, cl.p, withHedgeDelay(-1))
			for range 100 {
				if _, err := c.Get(testCtx(t), "k"); err != nil {
					t.Fatalf("Get: %v", err)
				}
			}
			a, b := cl.nodes[0][0].requests(), cl.nodes[1][0].requests()
			if a == 0 || b == 0 || a+b != 100 {
				t.Errorf("GETs per node = %d, %d; want both used, 100 in all", a, b)
			}
			if s := c.Stats(); s.Ties == 0 || s.Hits != 100 || s.Gets != 100 {
				t.Errorf("stats = %+v, want ties, 100 gets and hits", s)
			}
		})
	}
}

// TestGetSkipsSilentNode checks that a read the dead node does not answer
// is answered elsewhere, and that later reads leave the node alone: a read
// hedged to the other candidate after HedgeDelay keeps the dead node's
// request in flight (stalled) until its AttemptTimeout, and a read without
// a hedge times out and marks the node failed for FailBackoff.
func TestGetSkipsSilentNode(t *testing.T) {
	tests := []struct {
		name      string
		layers    int
		opts      []clientOpt
		other     []nodeOpt // how the other layer's node answers
		wantLayer int       // layer (or -1, the shim) that answers
		want      Stats
	}{
		{
			name: "hedged to the other layer", layers: 2, wantLayer: 1,
			opts: []clientOpt{withAttemptTimeout(time.Hour)},
			want: Stats{Hedges: 1, HedgeWins: 1},
		},
		{
			name: "hedge finds no copy: the other layer is read in full", layers: 2, wantLayer: 1,
			opts:  []clientOpt{withAttemptTimeout(time.Hour)},
			other: []nodeOpt{nodeHit(false)},
			want:  Stats{Hedges: 1, Retries: 1},
		},
		{
			name: "other layer serves after a timeout", layers: 2, wantLayer: 1,
			opts: []clientOpt{withHedgeDelay(-1)},
			want: Stats{Timeouts: 1, Retries: 1},
		},
		{
			name: "shim serves when no candidate is left", layers: 1, wantLayer: -1,
			want: Stats{Timeouts: 1, Retries: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := newCluster(t, withLayers(tt.layers))
			cl.store("k", "stored")
			dead := cl.nodes[0][0]
			dead.set(nodeSilent(true))
			if tt.layers > 1 {
				cl.nodes[1][0].set(tt.other...)
			}
			c := newTestClient(t, cl.p, tt.opts...)
			// Ties are random: read until the dead node was tried once.
			for i := 0; i < 100 && dead.requests() == 0; i++ {
				r, err := c.GetResult(testCtx(t), "k")
				if err != nil {
					t.Fatalf("Get: %v", err)
				}
				if r.Layer != tt.wantLayer {
					t.Fatalf("Get answered by layer %d, want %d", r.Layer, tt.wantLayer)
				}
			}
			seen := dead.requests()
			for range 20 {
				r, err := c.GetResult(testCtx(t), "k")
				if err != nil {
					t.Fatalf("Get: %v", err)
				}
				if r.Layer != tt.wantLayer {
					t.Fatalf("Get answered by layer %d, want %d", r.Layer, tt.wantLayer)
				}
			}
			if got := dead.requests(); got != seen {
				t.Errorf("the dead node got %d new GETs after it was tried, want 0", got-seen)
			}
			s := c.Stats()
			got := Stats{Timeouts: s.Timeouts, Retries: s.Retries, Hedges: s.Hedges, HedgeWins: s.HedgeWins, Errors: s.Errors}
			if got.Timeouts != tt.want.Timeouts || got.Retries != tt.want.Retries || got.Hedges != tt.want.Hedges ||
				got.HedgeWins != tt.want.HedgeWins || got.Errors != 0 {
				t.Errorf("stats %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestFailBackoffExpires(t *testing.T) {
	cl := newCluster(t, withLayers(1))
	cl.store("k", "stored")
	node := cl.nodes[0][0]
	node.set(nodeSilent(true))
	c := newTestClient(t, cl.p, withFailBackoff(time.Minute))
	clock := fakeClock(c)

	get := func(wantLayer int) {
		t.Helper()
		r, err := c.GetResult(testCtx(t), "k")
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if r.Layer != wantLayer {
			t.Fatalf("Get answered by layer %d, want %d", r.Layer, wantLayer)
		}
	}
	get(-1) // times out at the node, then the shim
	get(-1) // node skipped
	if got := node.requests(); got != 1 {
		t.Fatalf("node got %d GETs, want 1 (skipped during FailBackoff)", got)
	}
	clock.Add(int64(time.Minute))
	get(-1) // probed again, still silent
	if got, s := node.requests(), c.Stats(); got != 2 || s.Timeouts != 2 {
		t.Fatalf("after FailBackoff: node got %d GETs and %d timeouts, want 2 and 2", got, s.Timeouts)
	}
	node.set(nodeSilent(false))
	get(-1) // still in its second backoff
	clock.Add(int64(time.Minute))
	get(0) // recovered
	if s := c.Stats(); s.DirectReads != 4 || s.Hits != 1 {
		t.Errorf("stats %+v, want 4 direct reads and 1 hit", s)
	}
}

func TestGetReplyStatuses(t *testing.T) {
	tests := []struct {
		status    wire.Status
		hit       bool
		stored    bool
		wantErr   error
		wantLayer int
		wantShim  int // GETs the shim receives
	}{
		{status: wire.StatusOK, hit: true, wantLayer: 0},
		{status: wire.StatusOK, hit: false, wantLayer: 0},
		{status: wire.StatusNotFound, wantErr: ErrNotFound},
		{status: wire.StatusTooLarge, wantErr: ErrTooLarge},
		{status: wire.StatusNotOwner, stored: true, wantLayer: -1, wantShim: 1},
		{status: wire.StatusOverloaded, stored: true, wantLayer: -1, wantShim: 1},
		{status: wire.StatusUnavailable, stored: true, wantLayer: -1, wantShim: 1},
		{status: wire.StatusInternal, stored: true, wantLayer: -1, wantShim: 1},
		{status: wire.StatusOverloaded, stored: false, wantErr: ErrNotFound, wantShim: 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/hit=%v/stored=%v", tt.status, tt.hit, tt.stored), func(t *testing.T) {
			cl := newCluster(t, withLayers(1))
			if tt.stored {
				cl.store("k", "stored")
			}
			node, shim := cl.nodes[0][0], cl.shimFor("k")
			node.set(nodeStatus(tt.status), nodeHit(tt.hit))
			c := newTestClient(t, cl.p)
			r, err := c.GetResult(testCtx(t), "k")
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Get error = %v, want %v", err, tt.wantErr)
			}
			if err == nil && (r.Layer != tt.wantLayer || r.Hit != tt.hit) {
				t.Errorf("Get answered by layer %d hit %v, want layer %d hit %v", r.Layer, r.Hit, tt.wantLayer, tt.hit)
			}
			if got := distinctSeqs(shim.requests()); got != tt.wantShim {
				t.Errorf("shim got %d GETs, want %d", got, tt.wantShim)
			}
			for i, r := range shim.requests() {
				if r.op != wire.OpGet || r.flags&wire.FlagDirect == 0 {
					t.Errorf("shim request %d = %s flags %#x, want a direct GET", i, r.op, r.flags)
				}
			}
			s := c.Stats()
			if s.Timeouts != 0 || s.Retries != uint64(tt.wantShim) || node.requests() != 1 {
				t.Errorf("stats %+v and %d node GETs, want no timeout, %d retries, 1 node GET", s, node.requests(), tt.wantShim)
			}
			// A refusal does not put the node in FailBackoff.
			if _, _ = c.GetResult(testCtx(t), "k"); node.requests() != 2 {
				t.Errorf("second Get: node got %d GETs in all, want 2", node.requests())
			}
		})
	}
}

// TestGetTriesAnotherRound checks that a read whose candidates and shim all
// failed once tries again after a pause, skipping the node that timed out,
// instead of failing while its context allows.
func TestGetTriesAnotherRound(t *testing.T) {
	cl := newCluster(t, withLayers(1))
	cl.store("k", "stored")
	cl.nodes[0][0].set(nodeSilent(true)) // dead
	sh := cl.shimFor("k")
	sh.do(func(s *fakeShim) { s.unavailableGets = 1 }) // Redis back after one refusal
	c := newTestClient(t, cl.p)
	v, err := c.Get(testCtx(t), "k")
	if err != nil || string(v) != "stored" {
		t.Fatalf("Get = %q, %v; want the value from the second round", v, err)
	}
	if n, shim := cl.nodes[0][0].requests(), distinctSeqs(sh.requests()); n != 1 || shim != 2 {
		t.Errorf("GETs: %d to the dead node, %d to the shim; want 1 (then skipped) and 2", n, shim)
	}
}

// TestGetOutlivesAStorageRestart checks that a read with a deadline goes
// on past Config.Attempts while the shim answers that Redis is
// unavailable, and is answered once it is back; and that one whose
// deadline ends first fails with both the deadline and the last refusal.
func TestGetOutlivesAStorageRestart(t *testing.T) {
	cl := newCluster(t, withLayers(1))
	cl.store("k", "stored")
	sh := cl.shimFor("k")
	sh.do(func(s *fakeShim) { s.unavailableGets = DefaultAttempts + 2 })
	c := newTestClient(t, cl.p, withBypass())
	v, err := c.Get(testCtx(t), "k")
	if err != nil || string(v) != "stored" {
		t.Fatalf("Get = %q, %v; want the value once Redis is back", v, err)
	}
	if n := distinctSeqs(sh.requests()); n != DefaultAttempts+3 {
		t.Errorf("shim got %d GETs, want %d", n, DefaultAttempts+3)
	}

	sh.do(func(s *fakeShim) { s.unavailableGets = 1 << 30 }) // never back
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = c.Get(ctx, "k")
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Get past its deadline: %v, want the deadline and ErrUnavailable", err)
	}
}

func TestGetAttemptsBoundRequests(t *testing.T) {
	tests := []struct {
		name      string
		layers    int
		attempts  int
		wantNodes int // GETs to the (silent) nodes
		wantShim  int
		wantErr   bool
	}{
		{name: "one attempt, no fallback", layers: 1, attempts: 1, wantNodes: 1, wantErr: true},
		{name: "two layers then shim", layers: 2, attempts: 3, wantNodes: 2, wantShim: 1},
		{name: "three layers exhaust attempts", layers: 3, attempts: 3, wantNodes: 3, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := newCluster(t, withLayers(tt.layers))
			cl.store("k", "stored")
			for l := range tt.layers {
				cl.nodes[l][0].set(nodeSilent(true))
			}
			c := newTestClient(t, cl.p, withAttempts(tt.attempts), withHedgeDelay(-1))
			_, err := c.Get(noDeadline(t), "k")
			if (err != nil) != tt.wantErr {
				t.Fatalf("Get error = %v, want error %v", err, tt.wantErr)
			}
			nodes := 0
			for l := range tt.layers {
				nodes += cl.nodes[l][0].requests()
			}
			if shim := distinctSeqs(cl.shimFor("k").requests()); nodes != tt.wantNodes || shim != tt.wantShim {
				t.Errorf("GETs: %d to nodes, %d to the shim; want %d and %d", nodes, shim, tt.wantNodes, tt.wantShim)
			}
			if s := c.Stats(); s.Timeouts != uint64(tt.wantNodes) {
				t.Errorf("timeouts = %d, want %d", s.Timeouts, tt.wantNodes)
			}
		})
	}
}

// TestHedgedAwayNodeSkippedAfterAttemptTimeout checks that a silent node
// that a read hedged away from (its request abandoned) is skipped for
// FailBackoff once that request's AttemptTimeout has passed with no answer,
// as after a timeout, instead of looking idle again and being tried by the
// next reads.
func TestHedgedAwayNodeSkippedAfterAttemptTimeout(t *testing.T) {
	cl := newCluster(t, withLayers(2))
	cl.store("k", "stored")
	dead := cl.nodes[0][0]
	dead.set(nodeSilent(true))
	cl.nodes[1][0].set(nodeHit(false)) // the hedge finds no copy: the first request is abandoned
	c := newTestClient(t, cl.p, withAttemptTimeout(50*time.Millisecond), withFailBackoff(time.Hour))
	for i := 0; i < 100 && dead.requests() == 0; i++ { // ties are random
		if _, err := c.GetResult(testCtx(t), "k"); err != nil {
			t.Fatalf("Get: %v", err)
		}
	}
	if dead.requests() == 0 {
		t.Fatal("no read tried the silent node")
	}
	waitFor(t, "the abandoned request's timeout", func() bool { return c.Stats().Timeouts == 1 })
	seen := dead.requests()
	for range 20 {
		if _, err := c.GetResult(testCtx(t), "k"); err != nil {
			t.Fatalf("Get: %v", err)
		}
	}
	if got := dead.requests(); got != seen {
		t.Errorf("the silent node got %d GETs after its abandoned request timed out, want 0", got-seen)
	}
}

// TestHedgeTakesFirstFinalAnswer reads from two candidates of which one
// answers only once the test lets it and the other never: whichever the
// read asked first, it hedges to the other after HedgeDelay and returns the
// held node's answer, with no error, once it is released.
func TestHedgeTakesFirstFinalAnswer(t *testing.T) {
	cl := newCluster(t)
	cl.store("k", "stored")
	release := make(chan struct{})
	cl.nodes[0][0].set(nodeHold(release))
	cl.nodes[1][0].set(nodeSilent(true))
	reg := prometheus.NewRegistry()
	c := newTestClient(t, cl.p, withAttemptTimeout(time.Hour), withHedgeDelay(time.Millisecond), withRegisterer(reg))
	type result struct {
		r   Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := c.GetResult(testCtx(t), "k")
		done <- result{r, err}
	}()
	waitFor(t, "the hedge", func() bool { return c.Stats().Hedges == 1 })
	close(release)
	got := <-done
	if got.err != nil || got.r.Layer != 0 || string(got.r.Value) != "cached:"+cl.nodes[0][0].name {
		t.Fatalf("GetResult = %+v, %v; want the held node's value", got.r, got.err)
	}
	s := c.Stats()
	if s.Hedges != 1 || s.Errors != 0 || s.Timeouts != 0 {
		t.Errorf("stats %+v: want 1 hedge, no error, no timeout", s)
	}
	if got := counterValue(t, reg, "distcache_client_hedged_reads_total", nil); got != 1 {
		t.Errorf("distcache_client_hedged_reads_total = %v, want 1", got)
	}
	if got := counterValue(t, reg, "distcache_client_hedge_wins_total", nil); got != float64(s.HedgeWins) {
		t.Errorf("distcache_client_hedge_wins_total = %v, want %d", got, s.HedgeWins)
	}
}
