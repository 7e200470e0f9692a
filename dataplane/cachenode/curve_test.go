package cachenode

import (
	"errors"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/hotkey/mrc"
	"github.com/distcache/distcache/placement/partmap"
)

// curveCapacity is the capacity of the nodes of the curve tests: at most
// mrcResolution entries, so the estimators sample every key and the curve
// of a stream of fewer than 128 keys is exact (hotkey/mrc).
const curveCapacity = 64

// withCurveTestConfig gives the node curveCapacity entries and ends no
// window of its curve by itself: the test calls rotateCurve.
func withCurveTestConfig() harnessOption {
	return withConfig(func(c *Config) {
		c.Capacity = curveCapacity
		c.MRCWindow = -1
	})
}

// readCyclic reads keys in order, passes times, with flags set on each
// GET, and returns how many replies were hits.
func (h *harness) readCyclic(keys []string, passes int, flags wire.Flag) (hits uint64) {
	h.t.Helper()
	for range passes {
		for _, k := range keys {
			if rep := h.call(&wire.Message{Header: wire.Header{Op: wire.OpGet, Flags: flags}, Key: []byte(k)}); rep.Has(wire.FlagHit) {
				hits++
			}
		}
	}
	return hits
}

// checkCyclicCurve checks that c is the exact LRU curve of passes cyclic
// passes over n keys: every read misses below n entries, and from n on
// only the first pass does (miss ratio 1/passes). With no reads, every
// size misses.
func checkCyclicCurve(t *testing.T, c metrics.MissRatioCurve, n, passes int) {
	t.Helper()
	if len(c.Points) == 0 || c.Points[0].Entries != 1 || c.Points[len(c.Points)-1].Entries != mrcReach*curveCapacity {
		t.Fatalf("points %+v, want sizes from 1 to %d", c.Points, mrcReach*curveCapacity)
	}
	if !slices.ContainsFunc(c.Points, func(p metrics.CurvePoint) bool { return p.Entries == curveCapacity }) {
		t.Errorf("points %+v lack the capacity %d", c.Points, curveCapacity)
	}
	for i, p := range c.Points {
		if i > 0 && p.Entries <= c.Points[i-1].Entries {
			t.Fatalf("points %+v: sizes not increasing at %d", c.Points, i)
		}
		want := 1.0
		if passes > 0 && p.Entries >= n {
			want = 1 / float64(passes)
		}
		if math.Abs(p.MissRatio-want) > 1e-9 {
			t.Errorf("miss ratio at %d entries = %v, want %v", p.Entries, p.MissRatio, want)
		}
	}
}

// TestMissRatioCurveOfTheNodesReads sends cyclic reads through the node's
// handler and checks the reported curve, whose exact LRU form is a step
// at the number of keys, and the hits counted in the same window: the
// reads of keys the node serves count, hits and misses and hedged reads
// alike, but not those of keys another member owns, nor those a node that
// is not Active refuses.
func TestMissRatioCurveOfTheNodesReads(t *testing.T) {
	tests := []struct {
		name      string
		keys      int  // keys the node owns, read cyclically
		passes    int  // passes over them
		cached    int  // how many of them the node caches
		others    int  // keys of member 1 read in each pass
		hedged    bool // reads carry FlagCacheOnly
		failed    bool // the node is Failed while it is read
		wantReads int  // reads the curve covers
		wantHits  uint64
		wantSteps int // the curve's step: keys, or 0 for no reads at all
	}{
		{name: "every key cached", keys: 40, passes: 5, cached: 40,
			wantReads: 200, wantHits: 200, wantSteps: 40},
		{name: "no key cached", keys: 40, passes: 3,
			wantReads: 120, wantHits: 0, wantSteps: 40},
		{name: "some keys cached", keys: 30, passes: 4, cached: 10,
			wantReads: 120, wantHits: 40, wantSteps: 30},
		{name: "keys of another member not counted", keys: 20, passes: 2, cached: 5, others: 7,
			wantReads: 40, wantHits: 10, wantSteps: 20},
		{name: "hedged reads counted", keys: 25, passes: 2, cached: 5, hedged: true,
			wantReads: 50, wantHits: 10, wantSteps: 25},
		{name: "refused while failed", keys: 10, passes: 2, cached: 10, failed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, withMembers(2), withCurveTestConfig())
			p, err := partmap.Compile(h.m)
			if err != nil {
				t.Fatal(err)
			}
			keys, others := keysOwnedBy(p, 0, tt.keys), keysOwnedBy(p, 1, tt.others)
			for _, k := range keys[:tt.cached] {
				h.cache(k, "v-"+k, 1)
			}
			if tt.failed {
				h.setState(0, partmap.Failed)
			}
			var flags wire.Flag
			if tt.hedged {
				flags = wire.FlagCacheOnly
			}
			// The window under test starts after the misses that cached
			// the keys.
			t0 := time.Now()
			h.node.rotateCurve(t0)
			var hits uint64
			for range tt.passes {
				hits += h.readCyclic(keys, 1, flags)
				h.readCyclic(others, 1, flags)
			}
			h.node.rotateCurve(t0.Add(30 * time.Second))
			got := h.node.MissRatioCurve()
			if hits != tt.wantHits {
				t.Fatalf("%d hits answered, want %d", hits, tt.wantHits)
			}
			if got.Window != 30 || got.Requests != uint64(tt.wantReads) || got.Hits != tt.wantHits || got.Entries != curveCapacity {
				t.Errorf("window %vs, %d reads, %d hits, %d entries; want 30s, %d reads, %d hits, %d entries",
					got.Window, got.Requests, got.Hits, got.Entries, tt.wantReads, tt.wantHits, curveCapacity)
			}
			passes := tt.passes
			if tt.wantSteps == 0 {
				passes = 0
			}
			checkCyclicCurve(t, got, tt.wantSteps, passes)
		})
	}
}

// TestMissRatioCurveFollowsItsWindows shifts the workload between windows
// ended by the test (rotateCurve at instants it chooses, instead of the
// clock): the node reports the current window until one has ended, then
// always the last complete one, and the next window's reads show only
// once it has ended.
func TestMissRatioCurveFollowsItsWindows(t *testing.T) {
	type step struct {
		keys, passes int           // cyclic reads of keys "s<keys>-<i>" before anything else
		end          time.Duration // if > 0, end the window this long after the previous end
		// The report after the step: its window's length (< 0: the
		// current window, not checked), reads and step.
		window                float64
		reads, step, stepPass int
	}
	steps := []step{
		{window: -1, step: 0},
		{keys: 20, passes: 3, window: -1, reads: 60, step: 20, stepPass: 3},
		{end: 10 * time.Second, window: 10, reads: 60, step: 20, stepPass: 3},
		{keys: 50, passes: 2, window: 10, reads: 60, step: 20, stepPass: 3},
		{end: 30 * time.Second, window: 30, reads: 100, step: 50, stepPass: 2},
		{end: 30 * time.Second, window: 30, reads: 0, step: 0},
		{keys: 8, passes: 4, end: 5 * time.Second, window: 5, reads: 32, step: 8, stepPass: 4},
	}
	h := newHarness(t, withCurveTestConfig())
	h.node.curve.mu.Lock()
	at := h.node.curve.start // the first window's, so its length is exact too
	h.node.curve.mu.Unlock()
	for i, s := range steps {
		keys := make([]string, s.keys)
		for j := range keys {
			keys[j] = "s" + strconv.Itoa(s.keys) + "-" + strconv.Itoa(j)
		}
		h.readCyclic(keys, s.passes, 0)
		if s.end > 0 {
			at = at.Add(s.end)
			h.node.rotateCurve(at)
		}
		got := h.node.MissRatioCurve()
		if (s.window >= 0 && got.Window != s.window) || got.Window < 0 || got.Requests != uint64(s.reads) || got.Hits != 0 {
			t.Fatalf("step %d: window %vs, %d reads, %d hits; want %vs, %d reads, no hits",
				i, got.Window, got.Requests, got.Hits, s.window, s.reads)
		}
		checkCyclicCurve(t, got, s.step, s.stepPass)
	}
}

// TestMissRatioCurveWindowsEndByThemselves: a started node ends its
// windows every Config.MRCWindow.
func TestMissRatioCurveWindowsEndByThemselves(t *testing.T) {
	h := newHarness(t, withConfig(func(c *Config) { c.MRCWindow = time.Millisecond }))
	w := h.node.curve
	eventually(t, "two windows ended", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.rotations >= 2
	})
	if got := h.node.MissRatioCurve(); !(got.Window > 0) || got.Entries != DefaultCapacity {
		t.Errorf("report %+v, want a complete window of a node of %d entries", got, DefaultCapacity)
	}
}

func TestCurveSizes(t *testing.T) {
	tests := []struct {
		name               string
		largest, capacity  int
		n                  int
		wantLen            int // 0: not checked
		wantFirst, wantTop int
	}{
		{name: "small: every size", largest: 8, capacity: 2, n: 64, wantLen: 8, wantFirst: 1, wantTop: 8},
		{name: "default capacity", largest: 40000, capacity: 10000, n: 64, wantFirst: 1, wantTop: 40000},
		{name: "capacity off the grid", largest: 400, capacity: 100, n: 4, wantLen: 5, wantFirst: 1, wantTop: 400},
		{name: "unbounded", largest: 1000, capacity: 0, n: 64, wantFirst: 1, wantTop: 1000},
		{name: "nothing seen", largest: 0, capacity: 0, n: 64, wantLen: 1, wantFirst: 1, wantTop: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := curveSizes(tt.largest, tt.capacity, tt.n)
			if len(got) == 0 || got[0] != tt.wantFirst || got[len(got)-1] != tt.wantTop ||
				(tt.wantLen > 0 && len(got) != tt.wantLen) || len(got) > tt.n+1 {
				t.Fatalf("curveSizes(%d, %d, %d) = %v", tt.largest, tt.capacity, tt.n, got)
			}
			if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
				t.Errorf("sizes %v not strictly increasing", got)
			}
			if tt.capacity > 0 && !slices.Contains(got, tt.capacity) {
				t.Errorf("sizes %v lack the capacity %d", got, tt.capacity)
			}
			// Log-uniform: no ratio between neighbours much above the
			// grid's (largest^(1/(n-1))) past the first few sizes.
			ratio := math.Pow(float64(max(tt.largest, 1)), 1/float64(tt.n-1))
			for i := 1; i < len(got); i++ {
				if got[i-1] >= 10 && float64(got[i])/float64(got[i-1]) > ratio*1.1 {
					t.Errorf("sizes %v: gap from %d to %d", got, got[i-1], got[i])
				}
			}
		})
	}
}

func TestMRCConfig(t *testing.T) {
	tests := []struct {
		name     string
		capacity int
		mrc      mrc.Config
		wantRate float64
		wantErr  error
	}{
		{name: "default capacity", wantRate: 0.01},
		{name: "small capacity", capacity: 50, wantRate: 1},
		{name: "large capacity", capacity: 1_000_000, wantRate: 1e-4},
		{name: "rate set", capacity: 1_000_000, mrc: mrc.Config{InitialRate: 0.5}, wantRate: 0.5},
		{name: "invalid rate", mrc: mrc.Config{InitialRate: 2}, wantErr: mrc.ErrInvalidConfig},
		{name: "invalid samples", mrc: mrc.Config{MaxSamples: -1}, wantErr: mrc.ErrInvalidConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Capacity, cfg.MRC = tt.capacity, tt.mrc
			n, err := New(cfg)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("New: %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = n.Close() })
			if got := n.curve.cur.Load().Stats().SamplingRate; math.Abs(got-tt.wantRate) > 1e-9*tt.wantRate {
				t.Errorf("sampling rate %v, want %v", got, tt.wantRate)
			}
		})
	}
}

// TestMissRatioCurveConcurrentUse reads, ends windows and reports at once
// (for the race detector): every report is a consistent one.
func TestMissRatioCurveConcurrentUse(t *testing.T) {
	cfg := testConfig()
	cfg.MRCWindow, cfg.MRC.InitialRate = -1, 1 // every read takes the estimator's locked path
	n, req := hitFixtureWith(t, cfg)
	src := netip.MustParseAddrPort("127.0.0.1:9")
	const readers, reads = 2, 2000
	at := time.Now()
	n.rotateCurve(at) // the windows below are a second each
	var wg sync.WaitGroup
	for range readers {
		wg.Go(func() {
			var m wire.Message
			for range reads {
				m = req
				n.handle(discardSender{}, src, &m)
			}
		})
	}
	for i := range 50 {
		at = at.Add(time.Second)
		n.rotateCurve(at)
		c := n.MissRatioCurve()
		if c.Window != 1 || c.Hits > c.Requests || len(c.Points) == 0 {
			t.Fatalf("report %d: window %v, %d hits of %d reads, %d points", i, c.Window, c.Hits, c.Requests, len(c.Points))
		}
		for _, p := range c.Points {
			if !(p.MissRatio >= 0 && p.MissRatio <= 1) {
				t.Fatalf("report %d: miss ratio %v at %d entries", i, p.MissRatio, p.Entries)
			}
		}
	}
	wg.Wait()
	n.rotateCurve(at.Add(time.Second))
	if s := n.Stats(); s.Hits != readers*reads {
		t.Errorf("%d hits, want %d", s.Hits, readers*reads)
	}
}
