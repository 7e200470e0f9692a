package routing

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

func TestChoose(t *testing.T) {
	const now = int64(10_000)
	tests := []struct {
		name    string
		aging   AgingConfig
		loads   map[NodeID]float64 // observed at now unless in oldLoads
		old     map[NodeID]float64 // observed at time 0
		failed  []NodeID
		cands   []Candidate
		want    []int // acceptable answers (several only for ties)
		wantTie bool
	}{
		{name: "empty", cands: nil, want: []int{-1}},
		{name: "single", loads: map[NodeID]float64{1: 9}, cands: []Candidate{{Node: 1}}, want: []int{0}},
		{
			name:  "minimum of two",
			loads: map[NodeID]float64{1: 5, 2: 3},
			cands: []Candidate{{Node: 1}, {Node: 2}},
			want:  []int{1},
		},
		{
			name:  "minimum of four",
			loads: map[NodeID]float64{0: 4, 1: 3, 2: 0.5, 3: 2},
			cands: []Candidate{{Node: 0}, {Node: 1}, {Node: 2}, {Node: 3}},
			want:  []int{2},
		},
		{
			name:  "unknown node counts as zero",
			loads: map[NodeID]float64{1: 0.1},
			cands: []Candidate{{Node: 1}, {Node: 5000}},
			want:  []int{1},
		},
		{
			name:  "capacity scaling: 4/4 < 3/1",
			loads: map[NodeID]float64{1: 4, 2: 3},
			cands: []Candidate{{Node: 1, Capacity: 4}, {Node: 2, Capacity: 1}},
			want:  []int{0},
		},
		{
			name:  "capacity scaling: 3/0.5 > 4/1",
			loads: map[NodeID]float64{1: 3, 2: 4},
			cands: []Candidate{{Node: 1, Capacity: 0.5}, {Node: 2}},
			want:  []int{1},
		},
		{
			name:  "zero capacity means 1",
			loads: map[NodeID]float64{1: 2, 2: 3},
			cands: []Candidate{{Node: 1, Capacity: 0}, {Node: 2, Capacity: 2}},
			want:  []int{1},
		},
		{
			name:  "negative and NaN capacity mean 1",
			loads: map[NodeID]float64{1: 2, 2: 3, 3: 2.5},
			cands: []Candidate{{Node: 2, Capacity: -4}, {Node: 3, Capacity: math.NaN()}, {Node: 1, Capacity: -1}},
			want:  []int{2},
		},
		{
			name:   "failed minimum skipped",
			loads:  map[NodeID]float64{1: 1, 2: 5},
			failed: []NodeID{1},
			cands:  []Candidate{{Node: 1}, {Node: 2}},
			want:   []int{1},
		},
		{
			name:   "failed unknown node skipped",
			loads:  map[NodeID]float64{2: 5},
			failed: []NodeID{900},
			cands:  []Candidate{{Node: 900}, {Node: 2}},
			want:   []int{1},
		},
		{
			name:   "all failed",
			loads:  map[NodeID]float64{1: 1, 2: 5},
			failed: []NodeID{1, 2},
			cands:  []Candidate{{Node: 1}, {Node: 2}},
			want:   []int{-1},
		},
		{
			name:  "aged stale load loses to fresh smaller one",
			aging: AgingConfig{StaleAfter: 1000, HalfLife: 1000},
			old:   map[NodeID]float64{1: 1024}, // 9 s old: 1024/2^9 = 2
			loads: map[NodeID]float64{2: 3},
			cands: []Candidate{{Node: 1}, {Node: 2}},
			want:  []int{0},
		},
		{
			name:    "tie within epsilon",
			loads:   map[NodeID]float64{1: 0.3, 2: 0.1 * 3},
			cands:   []Candidate{{Node: 1}, {Node: 2}},
			want:    []int{0, 1},
			wantTie: true,
		},
		{
			name:  "no tie beyond epsilon",
			loads: map[NodeID]float64{1: 1 + 1e-9, 2: 1},
			cands: []Candidate{{Node: 1}, {Node: 2}},
			want:  []int{1},
		},
		{
			name:    "tie after capacity normalisation",
			loads:   map[NodeID]float64{1: 2, 2: 4, 3: 9},
			cands:   []Candidate{{Node: 1}, {Node: 2, Capacity: 2}, {Node: 3}},
			want:    []int{0, 1},
			wantTie: true,
		},
		{
			name:    "all zero is a tie",
			cands:   []Candidate{{Node: 1}, {Node: 2}, {Node: 3}},
			want:    []int{0, 1, 2},
			wantTie: true,
		},
		{
			name:    "failed node not part of a tie",
			loads:   map[NodeID]float64{1: 1, 2: 1, 3: 1},
			failed:  []NodeID{2},
			cands:   []Candidate{{Node: 1}, {Node: 2}, {Node: 3}},
			want:    []int{0, 2},
			wantTie: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tbl := mustTable(t, tc.aging)
			for n, l := range tc.loads {
				tbl.Observe(n, l, now)
			}
			for n, l := range tc.old {
				tbl.Observe(n, l, 0)
			}
			for _, n := range tc.failed {
				tbl.MarkFailed(n, true)
			}
			r := NewRouter(tbl, 1)
			seen := map[int]bool{}
			const rounds = 200
			for range rounds {
				got := r.Choose(tc.cands, now)
				if !slices.Contains(tc.want, got) {
					t.Fatalf("Choose = %d, want one of %v", got, tc.want)
				}
				seen[got] = true
			}
			if len(seen) != len(tc.want) {
				t.Errorf("over %d rounds saw %v, want every one of %v", rounds, seen, tc.want)
			}
			st := r.Stats()
			if tc.want[0] == -1 {
				if st.AllFailed != rounds || st.Choices != 0 {
					t.Errorf("Stats = %+v, want AllFailed=%d Choices=0", st, rounds)
				}
				return
			}
			wantTies := uint64(0)
			if tc.wantTie {
				wantTies = rounds
			}
			if st.Choices != rounds || st.Ties != wantTies || st.AllFailed != 0 {
				t.Errorf("Stats = %+v, want Choices=%d Ties=%d AllFailed=0", st, rounds, wantTies)
			}
		})
	}
}

// chiSquareCritical001 holds the chi-square critical values at significance
// 0.001 for 1..3 degrees of freedom.
var chiSquareCritical001 = []float64{1: 10.828, 2: 13.816, 3: 16.266}

// TestTieBreakUniform checks that ties are broken uniformly at random with a
// chi-square goodness-of-fit test at the 0.001 level.
func TestTieBreakUniform(t *testing.T) {
	tests := []struct {
		name  string
		loads []float64 // per candidate; node i gets loads[i]
		caps  []float64
		tied  []int // indices expected to share the choices
	}{
		{name: "2 tied zero", loads: []float64{0, 0}, caps: []float64{0, 0}, tied: []int{0, 1}},
		{name: "3 tied equal", loads: []float64{7, 7, 7}, caps: []float64{1, 1, 1}, tied: []int{0, 1, 2}},
		{name: "4 tied by capacity", loads: []float64{2, 4, 6, 8}, caps: []float64{1, 2, 3, 4}, tied: []int{0, 1, 2, 3}},
		{name: "3 tied of 4, higher last", loads: []float64{1, 1, 1, 2}, caps: []float64{1, 1, 1, 1}, tied: []int{0, 1, 2}},
		{name: "3 tied of 4, higher first", loads: []float64{5, 1, 1, 1}, caps: []float64{1, 1, 1, 1}, tied: []int{1, 2, 3}},
		{name: "2 tied within epsilon", loads: []float64{0.3, 0.1 * 3}, caps: []float64{1, 1}, tied: []int{0, 1}},
	}
	const n = 100_000
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tbl := mustTable(t, AgingConfig{})
			cands := make([]Candidate, len(tc.loads))
			for j, l := range tc.loads {
				tbl.Observe(NodeID(j), l, 0)
				cands[j] = Candidate{Node: NodeID(j), Capacity: tc.caps[j]}
			}
			r := NewRouter(tbl, uint64(1000+i))
			counts := make([]float64, len(cands))
			for range n {
				counts[r.Choose(cands, 0)]++
			}
			expected := float64(n) / float64(len(tc.tied))
			chi2 := 0.0
			for _, j := range tc.tied {
				d := counts[j] - expected
				chi2 += d * d / expected
			}
			var total float64
			for _, j := range tc.tied {
				total += counts[j]
			}
			if total != n {
				t.Fatalf("counts %v: non-tied candidates were chosen", counts)
			}
			crit := chiSquareCritical001[len(tc.tied)-1]
			t.Logf("counts %v chi2 %.3f (critical %.3f)", counts, chi2, crit)
			if chi2 > crit {
				t.Errorf("chi-square %.3f > %.3f: tie-break not uniform (counts %v)", chi2, crit, counts)
			}
		})
	}
}

func TestRouterDeterministic(t *testing.T) {
	tbl := mustTable(t, AgingConfig{})
	cands := []Candidate{{Node: 0}, {Node: 1}, {Node: 2}}
	run := func(seed uint64) []int {
		r := NewRouter(tbl, seed)
		out := make([]int, 64)
		for i := range out {
			out[i] = r.Choose(cands, 0)
		}
		return out
	}
	if a, b := run(42), run(42); !slices.Equal(a, b) {
		t.Errorf("same seed, different choices:\n%v\n%v", a, b)
	}
	if a, b := run(42), run(43); slices.Equal(a, b) {
		t.Errorf("different seeds, identical choices %v", a)
	}
}

func TestNewRouterNilTablePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("NewRouter(nil, 0) did not panic")
		}
	}()
	NewRouter(nil, 0)
}

func TestChooseDoesNotAllocate(t *testing.T) {
	tbl := mustTable(t, AgingConfig{StaleAfter: 100, HalfLife: 100})
	for n := NodeID(0); n < 8; n++ {
		tbl.Observe(n, float64(n%3), 0)
	}
	tbl.MarkFailed(7, true)
	cases := [][]Candidate{
		{{Node: 0}, {Node: 1}},
		{{Node: 0}, {Node: 3}}, // tie (both 0)
		{{Node: 1}, {Node: 4, Capacity: 2}, {Node: 7}, {Node: 2}}, // capacity + failed
		{{Node: 7}},   // all failed
		{},            // empty
		{{Node: 999}}, // unknown
	}
	for i, cands := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			r := NewRouter(tbl, 7)
			now := int64(0)
			allocs := testing.AllocsPerRun(1000, func() {
				now += 37 // crosses StaleAfter: exercises the aging path too
				_ = r.Choose(cands, now)
			})
			if allocs != 0 {
				t.Errorf("Choose allocates %v times per call, want 0", allocs)
			}
		})
	}
}
