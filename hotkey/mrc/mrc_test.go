package mrc

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/cespare/xxhash/v2"
)

func mustNew(tb testing.TB, cfg Config) *Estimator {
	tb.Helper()
	e, err := New(cfg)
	if err != nil {
		tb.Fatalf("New(%+v): %v", cfg, err)
	}
	return e
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"negative samples", Config{MaxSamples: -1}},
		{"too many samples", Config{MaxSamples: largestMaxSamples + 1}},
		{"negative rate", Config{InitialRate: -0.1}},
		{"rate above one", Config{InitialRate: 1.5}},
		{"NaN rate", Config{InitialRate: math.NaN()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := New(tt.cfg)
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("New(%+v) = %v, %v; want an error wrapping ErrInvalidConfig", tt.cfg, e, err)
			}
		})
	}
}

func TestNewAppliesConfig(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		wantRate float64
	}{
		{"zero value", Config{}, 1},
		{"rate one", Config{InitialRate: 1}, 1},
		{"rate one tenth", Config{MaxSamples: 16, InitialRate: 0.1}, 0.1},
		{"tiny rate", Config{InitialRate: 1e-30}, 1.0 / (1 << 64)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustNew(t, tt.cfg).Stats()
			if math.Abs(s.SamplingRate-tt.wantRate) > 1e-12 {
				t.Errorf("SamplingRate = %v, want %v", s.SamplingRate, tt.wantRate)
			}
			if s != (Stats{Threshold: s.Threshold, SamplingRate: s.SamplingRate}) {
				t.Errorf("Stats of a new estimator = %+v, want zero counters", s)
			}
		})
	}
}

// TestCurveEdgeCases checks the curve on traces small enough to reason
// about, where every key is sampled and the estimate is exact.
func TestCurveEdgeCases(t *testing.T) {
	tests := []struct {
		name  string
		trace []string
		sizes []int
		want  []float64
	}{
		{"empty estimator", nil, []int{0, 1, 10, 1000}, []float64{1, 1, 1, 1}},
		{"no sizes", []string{"a"}, []int{}, []float64{}},
		{"one reference", []string{"a"}, []int{0, 1, 2}, []float64{1, 1, 1}},
		{"one key repeated", []string{"a", "a", "a", "a", "a"}, []int{0, 1, 100}, []float64{1, 0.2, 0.2}},
		{"negative size", []string{"a", "a"}, []int{-5, 1}, []float64{1, 0.5}},
		// a b c a b c: the reuses have distance 3.
		{"cyclic", []string{"a", "b", "c", "a", "b", "c"}, []int{1, 2, 3, 4}, []float64{1, 1, 0.5, 0.5}},
		// a b a c c b: distances 2 (a), 1 (c), 3 (b).
		{"unsorted sizes", []string{"a", "b", "a", "c", "c", "b"}, []int{3, 1, 0, 2}, []float64{0.5, 5.0 / 6, 1, 4.0 / 6}},
		{"sizes beyond distinct keys", []string{"a", "b", "a", "c", "c", "b"}, []int{4, 1 << 30, math.MaxInt}, []float64{0.5, 0.5, 0.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := mustNew(t, Config{})
			for _, key := range tt.trace {
				e.ObserveString(key)
			}
			got := e.Curve(tt.sizes)
			if !slices.EqualFunc(got, tt.want, func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }) {
				t.Errorf("Curve(%v) = %v, want %v", tt.sizes, got, tt.want)
			}
		})
	}
}

func TestPoints(t *testing.T) {
	e := mustNew(t, Config{})
	if got, want := e.Points(0, 4), []Point{{Size: 1, MissRatio: 1}}; !slices.Equal(got, want) {
		t.Errorf("Points(0, 4) of an empty estimator = %v, want %v", got, want)
	}
	for _, key := range []string{"a", "b", "c", "a", "b", "c"} {
		e.ObserveString(key)
	}
	tests := []struct {
		maxSize, n int
		want       []Point
	}{
		{0, 3, []Point{{1, 1}, {2, 1}, {3, 0.5}}},
		{6, 3, []Point{{2, 1}, {4, 0.5}, {6, 0.5}}},
		{2, 5, []Point{{1, 1}, {2, 1}}},
		{10, 0, nil},
	}
	for _, tt := range tests {
		if got := e.Points(tt.maxSize, tt.n); !slices.Equal(got, tt.want) {
			t.Errorf("Points(%d, %d) = %v, want %v", tt.maxSize, tt.n, got, tt.want)
		}
	}
}

// TestExactWhileSampleFits checks that the estimate matches Mattson's
// algorithm while every key fits in the sample set (rate 1): the only
// error left is the histogram's interpolation within buckets wider than 1.
func TestExactWhileSampleFits(t *testing.T) {
	const keys, refs = 4000, 200_000
	trace := zipfTrace(0.8)(rand.New(rand.NewPCG(5, 6)), keys, refs)
	sizes := []int{1, 2, 10, 50, 127, 128, 500, 1000, 3999, 4000}
	e := mustNew(t, Config{MaxSamples: keys})
	observeIDs(e, trace)
	if s := e.Stats(); s.SamplingRate != 1 || s.SampleEvictions != 0 || s.Sampled != refs {
		t.Fatalf("Stats = %+v, want every reference sampled at rate 1", s)
	}
	exact := exactCurve(keys, trace, sizes)
	got := e.Curve(sizes)
	for i, size := range sizes {
		tolerance := 1e-12
		if size >= exactDistances {
			tolerance = 0.005
		}
		if math.Abs(got[i]-exact[i]) > tolerance {
			t.Errorf("miss ratio at %d = %.5f, want %.5f ± %v", size, got[i], exact[i], tolerance)
		}
	}
}

// TestCurveIsAMissRatioCurve checks, on random traces and sample sizes,
// that the curve lies in [0, 1], does not increase with the size, is 1 at
// size 0 and ends at the cold-miss ratio, and that the sample set stays
// within its bound.
func TestCurveIsAMissRatioCurve(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for trial := range 20 {
		keys := 1 + r.IntN(20_000)
		refs := 1 + r.IntN(50_000)
		samples := 1 + r.IntN(2000)
		trace := zipfTrace(0.5+r.Float64())(r, keys, refs)
		e := mustNew(t, Config{MaxSamples: samples, InitialRate: 0.05 + 0.95*r.Float64()})
		observeIDs(e, trace)
		s := e.Stats()
		if s.SampledKeys > samples || s.Observed != uint64(refs) || s.Sampled > s.Observed ||
			s.ColdMisses > s.Sampled || s.SampledKeys != int(s.ColdMisses-s.SampleEvictions) {
			t.Fatalf("trial %d (samples %d): inconsistent Stats %+v", trial, samples, s)
		}
		sizes := make([]int, 200)
		for i := range sizes {
			sizes[i] = i * i * (keys/1000 + 1)
		}
		curve := e.Curve(sizes)
		if curve[0] != 1 {
			t.Errorf("trial %d: miss ratio at size 0 = %v, want 1", trial, curve[0])
		}
		for i, ratio := range curve {
			if !(ratio >= 0 && ratio <= 1) {
				t.Fatalf("trial %d: miss ratio at %d = %v, outside [0, 1]", trial, sizes[i], ratio)
			}
			if i > 0 && ratio > curve[i-1] {
				t.Fatalf("trial %d: miss ratio rises from %v at %d to %v at %d", trial, curve[i-1], sizes[i-1], ratio, sizes[i])
			}
		}
		points := e.Points(0, 50)
		last := points[len(points)-1].MissRatio
		if beyond := e.Curve([]int{math.MaxInt})[0]; beyond != last {
			t.Errorf("trial %d: curve ends at %v, but Points(0, …) ends at %v", trial, beyond, last)
		}
	}
}

// TestSampleSetIsBounded checks the fixed-size mechanics: the sample set
// never exceeds MaxSamples, the threshold only falls, and each lowering
// evicts exactly the keys at or above the new threshold.
func TestSampleSetIsBounded(t *testing.T) {
	const samples = 64
	e := mustNew(t, Config{MaxSamples: samples})
	previous := e.Stats().Threshold
	for id := range uint64(100_000) {
		e.ObserveHash(xxhash.Sum64(binary.BigEndian.AppendUint64(nil, id)))
		s := e.Stats()
		if s.SampledKeys > samples {
			t.Fatalf("after %d keys: %d keys sampled, want ≤ %d", id+1, s.SampledKeys, samples)
		}
		if s.Threshold > previous {
			t.Fatalf("after %d keys: threshold rose from %d to %d", id+1, previous, s.Threshold)
		}
		previous = s.Threshold
	}
	s := e.Stats()
	if s.SampledKeys != samples || s.SampleEvictions != s.ColdMisses-samples {
		t.Fatalf("Stats = %+v, want a full sample set", s)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for hash := range e.stack.stamp {
		if hash >= s.Threshold {
			t.Errorf("sampled hash %#x is not below the threshold %#x", hash, s.Threshold)
		}
	}
	// 64 of 100k uniformly hashed keys: the rate is about 64/100k.
	if want := float64(samples) / 100_000; math.Abs(s.SamplingRate-want) > want/2 {
		t.Errorf("SamplingRate = %v, want about %v", s.SamplingRate, want)
	}
}

func TestObserveVariantsAgree(t *testing.T) {
	keys := []string{"alpha", "beta", "alpha", "gamma", "beta", "", "alpha"}
	sizes := []int{0, 1, 2, 3, 4}
	byBytes, byString, byHash := mustNew(t, Config{}), mustNew(t, Config{}), mustNew(t, Config{})
	for _, key := range keys {
		byBytes.Observe([]byte(key))
		byString.ObserveString(key)
		byHash.ObserveHash(xxhash.Sum64String(key))
	}
	want := byHash.Curve(sizes)
	for name, e := range map[string]*Estimator{"Observe": byBytes, "ObserveString": byString} {
		if got := e.Curve(sizes); !slices.Equal(got, want) {
			t.Errorf("%s: Curve = %v, ObserveHash gives %v", name, got, want)
		}
		if got, want := e.Stats(), byHash.Stats(); got != want {
			t.Errorf("%s: Stats = %+v, ObserveHash gives %+v", name, got, want)
		}
	}
}

// TestConcurrentObserve runs Observe, Curve, Stats and Reset from several
// goroutines; run it with -race.
func TestConcurrentObserve(t *testing.T) {
	const goroutines, perGoroutine = 8, 20_000
	e := mustNew(t, Config{MaxSamples: 256})
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 9))
			var buf [8]byte
			for range perGoroutine {
				binary.BigEndian.PutUint64(buf[:], r.Uint64N(50_000))
				e.Observe(buf[:])
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			_ = e.Curve([]int{10, 1000})
			_ = e.Points(0, 10)
			_ = e.Stats()
		}
	})
	wg.Wait()
	s := e.Stats()
	if s.Observed != goroutines*perGoroutine || s.SampledKeys > 256 {
		t.Errorf("Stats = %+v, want %d observed and at most 256 keys sampled", s, goroutines*perGoroutine)
	}

	wg.Go(e.Reset)
	for range 2 {
		wg.Go(func() {
			for i := range 1000 {
				e.ObserveString(string(rune('a' + i%26)))
			}
		})
	}
	wg.Wait()
	// A reference counted before the reset and sampled after it makes
	// Sampled exceed Observed; each goroutine has one reference in flight.
	if s := e.Stats(); s.SampledKeys > 256 || s.Sampled > s.Observed+2 {
		t.Errorf("Stats after a concurrent Reset = %+v", s)
	}
}

// TestObserveDoesNotAllocate checks both hot paths: an unsampled key and a
// key already in the sample set.
func TestObserveDoesNotAllocate(t *testing.T) {
	e := mustNew(t, Config{MaxSamples: 16})
	var sampledKey, unsampledKey []byte
	for id := uint64(0); sampledKey == nil || unsampledKey == nil; id++ {
		key := binary.BigEndian.AppendUint64(nil, id)
		e.Observe(key)
		if id < 1000 {
			continue // let the threshold settle
		}
		if xxhash.Sum64(key) < e.Stats().Threshold {
			sampledKey = key
		} else {
			unsampledKey = key
		}
	}
	for name, key := range map[string][]byte{"sampled": sampledKey, "unsampled": unsampledKey} {
		if allocs := testing.AllocsPerRun(1000, func() { e.Observe(key) }); allocs != 0 {
			t.Errorf("Observe of an %s key: %v allocations, want 0", name, allocs)
		}
	}
	text := string(sampledKey)
	if allocs := testing.AllocsPerRun(1000, func() { e.ObserveString(text) }); allocs != 0 {
		t.Errorf("ObserveString of a sampled key: %v allocations, want 0", allocs)
	}
}

// TestReuseStackDistances checks the stack distances against a plain LRU
// list across many compactions and removals.
func TestReuseStackDistances(t *testing.T) {
	const maxKeys = 40
	s := newReuseStack(maxKeys)
	var list []uint64 // most recent first
	r := rand.New(rand.NewPCG(10, 11))
	for step := range 20_000 {
		if len(list) > 0 && r.IntN(10) == 0 {
			victim := list[r.IntN(len(list))]
			s.remove(victim)
			list = slices.DeleteFunc(list, func(k uint64) bool { return k == victim })
			continue
		}
		key := uint64(r.IntN(2 * maxKeys))
		if !slices.Contains(list, key) && len(list) == maxKeys {
			continue
		}
		want := slices.Index(list, key) + 1
		distance, found := s.access(key)
		if found != (want > 0) || distance != want {
			t.Fatalf("step %d: access(%d) = %d, %v; want %d, %v", step, key, distance, found, want, want > 0)
		}
		if want > 0 {
			list = slices.Delete(list, want-1, want)
		}
		list = slices.Insert(list, 0, key)
		if s.len() != len(list) {
			t.Fatalf("step %d: len = %d, want %d", step, s.len(), len(list))
		}
	}
}

func TestBucketBoundsContainDistance(t *testing.T) {
	previous := -1
	for d := uint64(0); d < maxDistance; d = d + 1 + d/7 {
		i := bucketIndex(d)
		lower, width := bucketBounds(i)
		if d < lower || d >= lower+width || i < previous || i >= numBuckets {
			t.Fatalf("distance %d: bucket %d covers [%d, %d)", d, i, lower, lower+width)
		}
		if d >= exactDistances && float64(width)/float64(lower) > 1.0/subBuckets {
			t.Fatalf("distance %d: bucket width %d is over 1/%d of %d", d, width, subBuckets, lower)
		}
		previous = i
	}
	if i := bucketIndex(math.MaxUint64); i != numBuckets-1 {
		t.Errorf("bucketIndex(MaxUint64) = %d, want the last bucket %d", i, numBuckets-1)
	}
}

func TestHashHeapPopsInDescendingOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 13))
	h := newHashHeap(0)
	values := make([]uint64, 500)
	for i := range values {
		values[i] = r.Uint64N(100) // with duplicates
		h.push(values[i])
	}
	slices.Sort(values)
	slices.Reverse(values)
	for i, want := range values {
		if got := h.popMax(); got != want {
			t.Fatalf("pop %d = %d, want %d", i, got, want)
		}
	}
}

// TestExactSimulatorMatchesNaive checks the test's ground truth, the
// Fenwick-tree Mattson simulator, against the plain list version.
func TestExactSimulatorMatchesNaive(t *testing.T) {
	const keys = 300
	sizes := []int{0, 1, 2, 5, 17, 100, 299, 300, 1000}
	for seed := range uint64(5) {
		trace := zipfTrace(0.9)(rand.New(rand.NewPCG(seed, 14)), keys, 3000)
		got, want := exactCurve(keys, trace, sizes), naiveLRUCurve(trace, sizes)
		if !slices.Equal(got, want) {
			t.Errorf("seed %d: exact simulator %v, naive %v", seed, got, want)
		}
	}
}

// TestMemoryIsBounded checks that the memory is allocated by New and does
// not grow with the key space: a stream of new keys lowers the sampling
// rate and evicts from the sample set, but allocates (almost) nothing.
func TestMemoryIsBounded(t *testing.T) {
	const samples = 1024
	before := totalAlloc()
	e := mustNew(t, Config{MaxSamples: samples})
	allocated := totalAlloc() - before
	t.Logf("New with %d samples allocated %d bytes (%.0f per sample)", samples, allocated, float64(allocated)/samples)
	var buf [8]byte
	observeKeys := func(from, to uint64) {
		for id := from; id < to; id++ {
			binary.BigEndian.PutUint64(buf[:], id)
			e.Observe(buf[:])
		}
	}
	observeKeys(0, 100_000)
	before = totalAlloc()
	observeKeys(100_000, 1_100_000)
	if grown := totalAlloc() - before; grown > 64<<10 {
		t.Errorf("1M new keys allocated %d bytes, want about none", grown)
	}
	if s := e.Stats(); s.SampledKeys != samples {
		t.Errorf("Stats = %+v, want a full sample set", s)
	}
}

func totalAlloc() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}
