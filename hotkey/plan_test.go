package hotkey

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestPlan(t *testing.T) {
	type counts map[string]int
	tests := []struct {
		name     string
		tracked  counts // cached keys and their hits
		misses   counts // uncached keys and their misses (threshold 10)
		capacity int
		want     Decision
	}{
		{
			name:     "empty cache inserts hottest up to capacity",
			misses:   counts{"a": 50, "b": 30, "c": 20, "d": 9},
			capacity: 2,
			want:     Decision{Insert: []string{"a", "b"}},
		},
		{
			name:     "room for all",
			misses:   counts{"a": 50, "b": 30, "c": 20, "d": 9},
			capacity: 10,
			want:     Decision{Insert: []string{"a", "b", "c"}},
		},
		{
			name:     "fills free entries then replaces colder",
			tracked:  counts{"x": 5, "y": 100},
			misses:   counts{"a": 50, "b": 30, "c": 20},
			capacity: 3,
			want:     Decision{Insert: []string{"a", "b"}, Evict: []string{"x"}},
		},
		{
			name:     "full cache evicts coldest only for hotter",
			tracked:  counts{"x": 100, "y": 1, "z": 40},
			misses:   counts{"a": 50, "b": 30, "c": 45},
			capacity: 3,
			want:     Decision{Insert: []string{"a", "c"}, Evict: []string{"y", "z"}},
		},
		{
			name:     "colder candidates never evict",
			tracked:  counts{"x": 100, "y": 90},
			misses:   counts{"a": 50, "b": 89},
			capacity: 2,
			want:     Decision{},
		},
		{
			name:     "equally hot candidate does not churn",
			tracked:  counts{"x": 50},
			misses:   counts{"a": 50},
			capacity: 1,
			want:     Decision{},
		},
		{
			name:     "idle cached keys lose to any candidate",
			tracked:  counts{"x": 0, "y": 0},
			misses:   counts{"a": 10},
			capacity: 2,
			want:     Decision{Insert: []string{"a"}, Evict: []string{"x"}},
		},
		{
			name:     "ties broken by key",
			misses:   counts{"c": 20, "b": 20, "a": 20, "d": 20},
			capacity: 2,
			want:     Decision{Insert: []string{"a", "b"}},
		},
		{
			name:     "eviction ties broken by key",
			tracked:  counts{"y": 5, "x": 5},
			misses:   counts{"a": 50},
			capacity: 2,
			want:     Decision{Insert: []string{"a"}, Evict: []string{"x"}},
		},
		{
			name:     "ranked by interval count not report count",
			misses:   counts{"z": 500, "a": 20},
			capacity: 1,
			want:     Decision{Insert: []string{"z"}},
		},
		{
			name:     "over capacity evicts coldest unconditionally",
			tracked:  counts{"x": 1, "y": 2, "z": 3},
			capacity: 2,
			want:     Decision{Evict: []string{"x"}},
		},
		{
			name:     "over capacity then replacement",
			tracked:  counts{"x": 1, "y": 2, "z": 30},
			misses:   counts{"a": 20},
			capacity: 2,
			want:     Decision{Insert: []string{"a"}, Evict: []string{"x", "y"}},
		},
		{
			name:     "zero capacity",
			tracked:  counts{"x": 7},
			misses:   counts{"a": 70},
			capacity: 0,
			want:     Decision{Evict: []string{"x"}},
		},
		{
			name:     "negative capacity counts as zero",
			misses:   counts{"a": 70},
			capacity: -3,
			want:     Decision{},
		},
		{
			name:     "nothing reported",
			tracked:  counts{"x": 7},
			misses:   counts{"a": 9},
			capacity: 1,
			want:     Decision{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for seed := range uint64(3) { // same decision for any seed and record order
				d := mustDetector(t, Config{SketchWidth: testWidth, BloomBits: testBloom, Threshold: 10, Seed: seed})
				var ops []string
				for k, n := range tc.tracked {
					d.Track(k)
					for range n {
						ops = append(ops, "hit:"+k)
					}
				}
				for k, n := range tc.misses {
					for range n {
						ops = append(ops, "miss:"+k)
					}
				}
				rand.New(rand.NewPCG(seed, 1)).Shuffle(len(ops), func(i, j int) { ops[i], ops[j] = ops[j], ops[i] })
				for _, op := range ops {
					if k, ok := strings.CutPrefix(op, "hit:"); ok {
						d.RecordHit(k)
					} else if k, ok := strings.CutPrefix(op, "miss:"); ok {
						d.RecordMiss(k)
					}
				}
				got := d.Plan(tc.capacity)
				hits := got.Hits
				got.Hits = nil
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("seed %d: Plan(%d) = %+v, want %+v", seed, tc.capacity, got, tc.want)
				}
				// Hits: every tracked key with its interval's hits, most
				// hit first, ties by key.
				var wantHits []KeyHits
				for k, n := range tc.tracked {
					wantHits = append(wantHits, KeyHits{Key: k, Hits: uint64(n)})
				}
				slices.SortFunc(wantHits, func(a, b KeyHits) int { return cmp.Or(cmp.Compare(b.Hits, a.Hits), cmp.Compare(a.Key, b.Key)) })
				if len(hits) != len(wantHits) || (len(hits) > 0 && !reflect.DeepEqual(hits, wantHits)) {
					t.Fatalf("seed %d: hits %+v, want %+v", seed, hits, wantHits)
				}
				// Plan resets the interval but not the tracked set.
				st := d.Stats()
				if st.Intervals != 1 || len(d.candidates()) != 0 || d.Estimate("a") != 0 {
					t.Fatalf("seed %d: interval not reset: %+v", seed, st)
				}
				after := countsOf(d)
				if len(after) != len(tc.tracked) {
					t.Fatalf("seed %d: tracked set changed to %v", seed, after)
				}
				for k, n := range after {
					if n != 0 {
						t.Fatalf("seed %d: hits of %s = %d after Plan, want 0", seed, k, n)
					}
				}
			}
		})
	}
}

// TestPlanSkipsTracked checks that a reported key that the caller has cached
// (tracked) since its report is not inserted again.
func TestPlanSkipsTracked(t *testing.T) {
	d := mustDetector(t, Config{SketchWidth: testWidth, BloomBits: testBloom, Threshold: 2})
	for range 5 {
		d.RecordMiss("a")
		d.RecordMiss("b")
	}
	d.Track("a")
	if got, want := planWithoutHits(d, 10), (Decision{Insert: []string{"b"}}); !reflect.DeepEqual(got, want) {
		t.Fatalf("Plan = %+v, want %+v", got, want)
	}
}

// TestPlanIntervals applies decisions across intervals like an agent.
func TestPlanIntervals(t *testing.T) {
	d := mustDetector(t, Config{SketchWidth: testWidth, BloomBits: testBloom, Threshold: 5, Seed: 9})
	apply := func(dec Decision) {
		for _, k := range dec.Evict {
			d.Untrack(k)
		}
		for _, k := range dec.Insert {
			d.Track(k)
		}
	}
	query := func(k string, n int) {
		for range n {
			if d.isTracked(k) {
				d.RecordHit(k)
			} else {
				d.RecordMiss(k)
			}
		}
	}
	// Interval 1: a and b are hot; capacity 2.
	query("a", 30)
	query("b", 20)
	query("c", 10)
	dec := planWithoutHits(d, 2)
	if want := (Decision{Insert: []string{"a", "b"}}); !reflect.DeepEqual(dec, want) {
		t.Fatalf("interval 1: %+v, want %+v", dec, want)
	}
	apply(dec)
	// Interval 2: a stays hot, b cools down, c heats up.
	query("a", 30)
	query("b", 2)
	query("c", 25)
	dec = planWithoutHits(d, 2)
	if want := (Decision{Insert: []string{"c"}, Evict: []string{"b"}}); !reflect.DeepEqual(dec, want) {
		t.Fatalf("interval 2: %+v, want %+v", dec, want)
	}
	apply(dec)
	// Interval 3: nothing changes.
	query("a", 30)
	query("c", 25)
	query("b", 6)
	if dec = planWithoutHits(d, 2); !reflect.DeepEqual(dec, Decision{}) {
		t.Fatalf("interval 3: %+v, want no change", dec)
	}
	if got := countsOf(d); len(got) != 2 {
		t.Fatalf("tracked = %v, want a and c", got)
	}
}

// topKRef is the sort-based reference for TopK.
func topKRef(items []Candidate, k int) []Candidate {
	s := slices.Clone(items)
	slices.SortFunc(s, func(a, b Candidate) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	if k <= 0 || len(s) == 0 {
		return nil
	}
	return s[:min(k, len(s))]
}

func TestTopK(t *testing.T) {
	c := func(k string, n uint32) Candidate { return Candidate{Key: k, Count: n} }
	tests := []struct {
		items []Candidate
		k     int
		want  []Candidate
	}{
		{items: nil, k: 3, want: nil},
		{items: []Candidate{c("a", 1)}, k: 0, want: nil},
		{items: []Candidate{c("a", 1)}, k: -1, want: nil},
		{items: []Candidate{c("a", 1)}, k: 5, want: []Candidate{c("a", 1)}},
		{items: []Candidate{c("a", 1), c("b", 3), c("c", 2)}, k: 2, want: []Candidate{c("b", 3), c("c", 2)}},
		{items: []Candidate{c("a", 1), c("b", 3), c("c", 2)}, k: 3, want: []Candidate{c("b", 3), c("c", 2), c("a", 1)}},
		{items: []Candidate{c("d", 5), c("b", 5), c("c", 5), c("a", 5)}, k: 2, want: []Candidate{c("a", 5), c("b", 5)}},
		{items: []Candidate{c("z", 0), c("y", 4294967295), c("x", 7)}, k: 1, want: []Candidate{c("y", 4294967295)}},
		{items: []Candidate{c("a", 2), c("a", 2), c("b", 2)}, k: 2, want: []Candidate{c("a", 2), c("a", 2)}},
	}
	for i, tc := range tests {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			in := slices.Clone(tc.items)
			got := TopK(tc.items, tc.k)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("TopK(%v, %d) = %v, want %v", tc.items, tc.k, got, tc.want)
			}
			if !reflect.DeepEqual(in, tc.items) {
				t.Fatalf("TopK modified its input: %v, was %v", tc.items, in)
			}
		})
	}
}

func TestTopKRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(2024, 17))
	for trial := range 500 {
		n := r.IntN(200)
		items := make([]Candidate, n)
		maxCount := uint32(1 + r.IntN(20)) // small ranges force many ties
		for i := range items {
			items[i] = Candidate{Key: "k" + strconv.Itoa(r.IntN(100)), Count: r.Uint32N(maxCount)}
		}
		k := r.IntN(n+10) - 2
		got, want := TopK(items, k), topKRef(items, k)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("trial %d: TopK(n=%d, k=%d) = %v, want %v", trial, n, k, got, want)
		}
	}
}

func ExampleTopK() {
	hot := TopK([]Candidate{{"a", 3}, {"b", 9}, {"c", 3}, {"d", 1}}, 3)
	fmt.Println(hot)
	// Output: [{b 9} {a 3} {c 3}]
}

// planWithoutHits is d.Plan(capacity) with its Hits left out, for tests of
// the insertions and evictions alone (TestPlan checks Hits).
func planWithoutHits(d *Detector, capacity int) Decision {
	dec := d.Plan(capacity)
	dec.Hits = nil
	return dec
}
