package routing

import (
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func mustTable(t testing.TB, aging AgingConfig) *LoadTable {
	t.Helper()
	tbl, err := NewLoadTable(aging)
	if err != nil {
		t.Fatalf("NewLoadTable(%+v): %v", aging, err)
	}
	return tbl
}

func relErr(got, want float64) float64 {
	if want == 0 {
		return math.Abs(got)
	}
	return math.Abs(got-want) / math.Abs(want)
}

func TestNewLoadTableConfig(t *testing.T) {
	tests := []struct {
		name    string
		aging   AgingConfig
		wantErr bool
	}{
		{"zero disables aging", AgingConfig{}, false},
		{"enabled", AgingConfig{StaleAfter: 10, HalfLife: 5}, false},
		{"disabled ignores half-life", AgingConfig{StaleAfter: 0, HalfLife: 5}, false},
		{"negative stale-after", AgingConfig{StaleAfter: -1, HalfLife: 5}, true},
		{"negative half-life", AgingConfig{StaleAfter: 10, HalfLife: -5}, true},
		{"enabled without half-life", AgingConfig{StaleAfter: 10}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tbl, err := NewLoadTable(tc.aging)
			if !tc.wantErr {
				if err != nil || tbl == nil {
					t.Fatalf("got (%v, %v), want a table", tbl, err)
				}
				return
			}
			if err == nil {
				t.Fatal("got nil error, want one")
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("error %q does not wrap ErrInvalidConfig", err)
			}
			if !strings.HasPrefix(err.Error(), "cannot create load table: ") {
				t.Errorf("error %q lacks the \"cannot create load table: \" prefix", err)
			}
		})
	}
}

func TestObserveAndLoad(t *testing.T) {
	tbl := mustTable(t, AgingConfig{})
	if got := tbl.Load(3, 0); got != 0 {
		t.Errorf("unknown node: Load = %v, want 0", got)
	}
	if got := tbl.Load(MaxNodes+5, 0); got != 0 {
		t.Errorf("out-of-range node: Load = %v, want 0", got)
	}
	tbl.Observe(3, 12.5, 100)
	tbl.Observe(3, 7, 200) // latest wins
	tbl.Observe(700, 1.5, 200)
	if got := tbl.Load(3, 1<<40); got != 7 {
		t.Errorf("Load(3) = %v, want 7 (aging disabled)", got)
	}
	if got := tbl.Load(700, 0); got != 1.5 {
		t.Errorf("Load(700) after growth = %v, want 1.5", got)
	}
	if got := tbl.Load(3, 0); got != 7 {
		t.Errorf("Load(3) after growth = %v, want 7", got)
	}

	ignored := []struct {
		node NodeID
		load float64
	}{
		{3, math.NaN()},
		{3, -1},
		{3, math.Inf(1)},
		{3, math.Inf(-1)},
		{MaxNodes, 1},
		{math.MaxUint32, 1},
	}
	for _, o := range ignored {
		tbl.Observe(o.node, o.load, 300)
	}
	if got := tbl.Load(3, 0); got != 7 {
		t.Errorf("Load(3) after invalid observations = %v, want 7", got)
	}
	if got := tbl.Stats().IgnoredObservations; got != uint64(len(ignored)) {
		t.Errorf("IgnoredObservations = %d, want %d", got, len(ignored))
	}
	if n := len(tbl.chunks()); n > 16 {
		t.Errorf("directory has %d chunks; out-of-range IDs must not grow it", n)
	}
}

func TestAging(t *testing.T) {
	const t0 = int64(1_000_000)
	tests := []struct {
		name   string
		aging  AgingConfig
		at     int64 // Load time, relative to t0
		want   float64
		reobs  int64 // if non-zero, observe 80 again at t0+reobs
		reLoad float64
	}{
		{name: "fresh", aging: AgingConfig{1000, 500}, at: 0, want: 80},
		{name: "just before stale", aging: AgingConfig{1000, 500}, at: 999, want: 80},
		{name: "exactly stale", aging: AgingConfig{1000, 500}, at: 1000, want: 80},
		{name: "one half-life", aging: AgingConfig{1000, 500}, at: 1000 + 500, want: 40},
		{name: "two half-lives", aging: AgingConfig{1000, 500}, at: 1000 + 2*500, want: 20},
		{name: "ten half-lives", aging: AgingConfig{1000, 500}, at: 1000 + 10*500, want: 80.0 / 1024},
		{name: "half a half-life", aging: AgingConfig{1000, 500}, at: 1000 + 250, want: 80 / math.Sqrt2},
		{name: "odd half-life k=7", aging: AgingConfig{7, 3}, at: 7 + 7*3, want: 80.0 / 128},
		{name: "huge age decays to ~0", aging: AgingConfig{1, 1}, at: 1 << 40, want: 0},
		{name: "now before observation", aging: AgingConfig{1000, 500}, at: -5000, want: 80},
		{name: "aging disabled", aging: AgingConfig{}, at: 1 << 50, want: 80},
		{name: "wall-clock scale", aging: AgingConfig{1e9, 2e9}, at: 1e9 + 3*2e9, want: 10},
		{name: "re-observe resets age", aging: AgingConfig{1000, 500}, at: 5000 + 1000, want: 80, reobs: 5000},
		{name: "re-observe then one half-life", aging: AgingConfig{1000, 500}, at: 5000 + 1500, want: 40, reobs: 5000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tbl := mustTable(t, tc.aging)
			const node = 9
			tbl.Observe(node, 80, t0)
			if tc.reobs != 0 {
				if got := tbl.Load(node, t0+tc.reobs); got >= 80 {
					t.Fatalf("before re-observe: Load = %v, want < 80 (aged)", got)
				}
				tbl.Observe(node, 80, t0+tc.reobs)
			}
			got := tbl.Load(node, t0+tc.at)
			if tc.want == 0 {
				if got > 1e-300 {
					t.Errorf("Load = %v, want ~0", got)
				}
				return
			}
			if e := relErr(got, tc.want); e > 1e-9 {
				t.Errorf("Load = %v, want %v (rel err %g)", got, tc.want, e)
			}
		})
	}
}

func TestMarkFailed(t *testing.T) {
	tbl := mustTable(t, AgingConfig{})
	if tbl.Failed(5) || tbl.Failed(100000) {
		t.Fatal("fresh table reports a failed node")
	}
	tbl.Observe(5, 3, 0)
	tbl.MarkFailed(5, true)
	tbl.MarkFailed(1000, true) // grows the table
	tbl.MarkFailed(2000, false)
	tbl.MarkFailed(MaxNodes, true) // out of range: no-op
	for _, tc := range []struct {
		node NodeID
		want bool
	}{{5, true}, {1000, true}, {2000, false}, {6, false}, {MaxNodes, false}} {
		if got := tbl.Failed(tc.node); got != tc.want {
			t.Errorf("Failed(%d) = %v, want %v", tc.node, got, tc.want)
		}
	}
	if got := tbl.Load(5, 0); got != 3 {
		t.Errorf("failed node's load = %v, want 3 (kept)", got)
	}
	tbl.MarkFailed(5, false)
	if tbl.Failed(5) {
		t.Error("Failed(5) after recovery = true")
	}
}

func TestReset(t *testing.T) {
	tbl := mustTable(t, AgingConfig{StaleAfter: 10, HalfLife: 10})
	for n := NodeID(0); n < 300; n++ {
		tbl.Observe(n, float64(n)+1, 50)
	}
	tbl.MarkFailed(7, true)
	tbl.Reset()
	for n := NodeID(0); n < 300; n++ {
		if got := tbl.Load(n, 50); got != 0 {
			t.Fatalf("after Reset: Load(%d) = %v, want 0", n, got)
		}
	}
	if !tbl.Failed(7) {
		t.Error("Reset cleared a failure mark; it must keep them")
	}
	tbl.Observe(4, 2, 60)
	if got := tbl.Load(4, 60); got != 2 {
		t.Errorf("Observe after Reset: Load = %v, want 2", got)
	}
}

func TestObserveDoesNotAllocate(t *testing.T) {
	tbl := mustTable(t, AgingConfig{StaleAfter: 100, HalfLife: 100})
	tbl.Observe(200, 1, 0) // grow once, outside the measurement
	now := int64(0)
	allocs := testing.AllocsPerRun(1000, func() {
		now++
		tbl.Observe(NodeID(now%201), float64(now), now)
		_ = tbl.Load(NodeID(now%201), now+1000)
		tbl.Observe(0, math.NaN(), now) // ignored path
	})
	if allocs != 0 {
		t.Errorf("Observe/Load allocate %v times per run, want 0", allocs)
	}
}

// TestTableConcurrent hammers a table from several goroutines (run with
// -race). Writers always store load == 2*stamp, so a torn (load, stamp) pair
// from the sequence lock would be detected by the readers.
func TestTableConcurrent(t *testing.T) {
	tbl := mustTable(t, AgingConfig{StaleAfter: 50, HalfLife: 20})
	const (
		goroutines = 4
		iters      = 20000
		nodes      = 300 // > 64: the directory grows while others read
	)
	var wg sync.WaitGroup
	errs := make(chan string, goroutines*2)
	for g := range goroutines {
		wg.Add(2)
		go func() { // writer
			defer wg.Done()
			for i := range iters {
				node := NodeID((i*7 + g*31) % nodes)
				stamp := int64(i*goroutines + g + 1)
				tbl.Observe(node, 2*float64(stamp), stamp)
				if i%97 == 0 {
					tbl.MarkFailed(node, i%2 == 0)
				}
				if g == 0 && i%1000 == 999 {
					tbl.Reset() // writes (0, 0), which keeps the invariant
				}
			}
		}()
		go func() { // reader
			defer wg.Done()
			r := NewRouter(tbl, uint64(g))
			cands := make([]Candidate, 3)
			for i := range iters {
				node := NodeID((i*13 + g) % nodes)
				if e := lookup(tbl.chunks(), node); e != nil {
					l, st := e.read()
					if l != 2*float64(st) {
						errs <- "torn read"
						return
					}
				}
				_ = tbl.Load(node, int64(i))
				_ = tbl.Failed(node)
				for j := range cands {
					cands[j] = Candidate{Node: NodeID((i + j*101) % nodes), Capacity: float64(j + 1)}
				}
				if k := r.Choose(cands, int64(i)); k >= len(cands) {
					errs <- "Choose out of range"
					return
				}
				_ = tbl.Stats()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if n := len(tbl.chunks()); n*chunkSize < nodes {
		t.Errorf("directory covers %d nodes, want >= %d", n*chunkSize, nodes)
	}
}

// TestSeqlockNoTornReads concentrates writers and readers on one entry, where
// a broken sequence lock would hand out (load, stamp) pairs from different
// writes. Writers alternate between two pairs that age to the same value v at
// the readers' fixed now: (v, now) and (2v, now-StaleAfter-HalfLife). A torn
// pair ages to v/2 or 2v instead. Load readers check the value; Choose readers
// compare node 0 against node 1 fixed at v, so every choice must be a tie
// (this covers Choose's hand-inlined copy of the read path).
func TestSeqlockNoTornReads(t *testing.T) {
	const (
		staleAfter = 1000
		halfLife   = 500
		now        = int64(10_000)
		v          = 8.0
		writers    = 2
		iters      = 50000
	)
	tbl := mustTable(t, AgingConfig{StaleAfter: staleAfter, HalfLife: halfLife})
	tbl.Observe(0, v, now)
	tbl.Observe(1, v, now)
	var writing, reading sync.WaitGroup
	var torn, reads atomic.Int64
	var done atomic.Bool
	reading.Add(2)
	go func() { // Load reader: runs until the writers are done
		defer reading.Done()
		for n := int64(1); ; n++ {
			if got := tbl.Load(0, now); relErr(got, v) > 1e-12 {
				torn.Add(1)
			}
			if done.Load() {
				reads.Add(n)
				return
			}
		}
	}()
	go func() { // Choose reader
		defer reading.Done()
		r := NewRouter(tbl, 1)
		cands := []Candidate{{Node: 0}, {Node: 1}}
		for n := int64(1); ; n++ {
			r.Choose(cands, now)
			if done.Load() {
				st := r.Stats()
				torn.Add(int64(st.Choices - st.Ties))
				reads.Add(n)
				return
			}
		}
	}()
	for g := range writers {
		writing.Add(1)
		go func() {
			defer writing.Done()
			for i := range iters {
				if (i+g)%2 == 0 {
					tbl.Observe(0, v, now)
				} else {
					tbl.Observe(0, 2*v, now-staleAfter-halfLife)
				}
			}
		}()
	}
	writing.Wait()
	done.Store(true)
	reading.Wait()
	t.Logf("%d reads during %d writes", reads.Load(), writers*iters)
	if n := torn.Load(); n != 0 {
		t.Errorf("%d torn (load, stamp) reads", n)
	}
}
