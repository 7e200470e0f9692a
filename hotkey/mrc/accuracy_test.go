package mrc

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// accuracySampleSizes returns the MaxSamples values whose error the
// accuracy test reports; the bounds are asserted for DefaultMaxSamples,
// the only one tried under the race detector and with -short.
func accuracySampleSizes() []int {
	if raceEnabled || testing.Short() {
		return []int{DefaultMaxSamples}
	}
	return []int{2048, DefaultMaxSamples, 32768}
}

// accuracySizes are the cache sizes at which the curves are compared.
var accuracySizes = []int{10, 100, 1_000, 10_000, 100_000}

// Error bounds for DefaultMaxSamples (8K samples). SHARDS (Waldspurger et
// al., FAST '15) reports a mean absolute error of about 0.01 or less with
// 8K samples, over sizes spread evenly across the whole curve (where
// sizes much larger than the sampling interval 1/R dominate):
//   - maxResolvedMAE applies to the sizes of accuracySizes of at least
//     1000, all over ten times 1/R in these workloads (1/R ≤ 80 at 8K
//     samples), and to the 100 evenly spaced sizes of evenSizes;
//   - maxOverallMAE covers all of accuracySizes, including 10 and 100,
//     which are near or below 1/R: a reference is placed to within 1/R
//     entries only, and the miss ratio there depends mostly on whether the
//     few hottest keys happen to be sampled. SHARDS does not resolve such
//     sizes; the bound only guards against gross errors.
const (
	maxResolvedMAE = 0.01
	maxOverallMAE  = 0.04
)

// accuracyWorkloads returns the workloads of the accuracy test; under the
// race detector and with -short they are ten times smaller.
func accuracyWorkloads() []workload {
	scale := 1
	if raceEnabled || testing.Short() {
		scale = 10
	}
	return []workload{
		{"zipf-0.9", 1_000_000 / scale, 2_000_000 / scale, zipfTrace(0.9)},
		{"zipf-0.99", 1_000_000 / scale, 2_000_000 / scale, zipfTrace(0.99)},
		{"zipf-1.2", 1_000_000 / scale, 2_000_000 / scale, zipfTrace(1.2)},
		{"uniform", 100_000 / scale, 1_000_000 / scale, uniformTrace},
		{"scan", 1_000_000 / scale, 2_000_000 / scale, scanTrace},
	}
}

// evenSizes returns n sizes evenly spaced up to keys: the whole curve at a
// uniform resolution, as in the SHARDS evaluation.
func evenSizes(keys, n int) []int {
	sizes := make([]int, n)
	for i := range sizes {
		sizes[i] = max(keys*(i+1)/n, 1)
	}
	return sizes
}

// curveError is the error of an estimated curve against the exact one.
type curveError struct {
	overall    float64 // MAE over accuracySizes
	resolved   float64 // MAE over accuracySizes ≥ 1000
	even       float64 // MAE over evenSizes
	unadjusted float64 // overall, without the SHARDS adjustment
}

func measureError(e *Estimator, exact, exactEven []float64, even []int) curveError {
	estimate := e.Curve(accuracySizes)
	raw := e.evaluator(false)
	unadjusted := make([]float64, len(accuracySizes))
	for i, size := range accuracySizes {
		unadjusted[i] = raw.missRatio(size)
	}
	resolvedFrom := slices.Index(accuracySizes, 1_000)
	return curveError{
		overall:    meanAbsoluteError(estimate, exact),
		resolved:   meanAbsoluteError(estimate[resolvedFrom:], exact[resolvedFrom:]),
		even:       meanAbsoluteError(e.Curve(even), exactEven),
		unadjusted: meanAbsoluteError(unadjusted, exact),
	}
}

// TestCurveMatchesExactLRU compares the estimated curves with Mattson's
// exact LRU curves. Run with -v for the table of errors per workload and
// sample size.
func TestCurveMatchesExactLRU(t *testing.T) {
	for _, w := range accuracyWorkloads() {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			trace := w.trace(rand.New(rand.NewPCG(1, 2)), w.keys, w.refs)
			even := evenSizes(w.keys, 100)
			simulation := simulateExactLRU(w.keys, trace)
			exact, exactEven := simulation.curve(accuracySizes), simulation.curve(even)
			t.Logf("keys=%d refs=%d exact miss ratios at %v: %.3f", w.keys, w.refs, accuracySizes, exact)
			for _, samples := range accuracySampleSizes() {
				e, err := New(Config{MaxSamples: samples})
				if err != nil {
					t.Fatal(err)
				}
				observeIDs(e, trace)
				got := measureError(e, exact, exactEven, even)
				t.Logf("samples=%-5d rate=%.4f MAE overall=%.4f resolved=%.4f even=%.4f unadjusted=%.4f estimate=%.3f",
					samples, e.Stats().SamplingRate, got.overall, got.resolved, got.even, got.unadjusted, e.Curve(accuracySizes))
				if samples != DefaultMaxSamples {
					continue
				}
				if got.resolved > maxResolvedMAE || got.even > maxResolvedMAE {
					t.Errorf("samples=%d: MAE at sizes ≥ 1000 = %.4f, at even sizes = %.4f, want ≤ %v",
						samples, got.resolved, got.even, maxResolvedMAE)
				}
				if got.overall > maxOverallMAE {
					t.Errorf("samples=%d: MAE at %v = %.4f, want ≤ %v", samples, accuracySizes, got.overall, maxOverallMAE)
				}
			}
		})
	}
}

// TestResetFollowsShiftedHotSet checks that after Reset the curve is that
// of the workload since the reset, when the hot set moved to other keys.
func TestResetFollowsShiftedHotSet(t *testing.T) {
	keys, refs := 200_000, 2_000_000
	if raceEnabled || testing.Short() {
		keys, refs = keys/10, refs/10
	}
	trace := shiftTrace(rand.New(rand.NewPCG(3, 4)), keys, refs)
	before, after := trace[:refs/2], trace[refs/2:]
	even := evenSizes(keys, 100)
	simulation := simulateExactLRU(keys, after)
	exactAfter, exactAfterEven := simulation.curve(accuracySizes), simulation.curve(even)

	e, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	observeIDs(e, before)
	continued, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	observeIDs(continued, trace)

	e.Reset()
	if s := e.Stats(); s.Observed != 0 || s.Sampled != 0 || s.SampledKeys != 0 || s.SamplingRate != 1 {
		t.Fatalf("Stats after Reset = %+v, want zero counters and rate 1", s)
	}
	observeIDs(e, after)
	got := measureError(e, exactAfter, exactAfterEven, even)
	stale := measureError(continued, exactAfter, exactAfterEven, even)
	t.Logf("exact after shift: %.3f", exactAfter)
	t.Logf("with Reset:    MAE overall=%.4f resolved=%.4f even=%.4f estimate=%.3f",
		got.overall, got.resolved, got.even, e.Curve(accuracySizes))
	t.Logf("without Reset: MAE overall=%.4f resolved=%.4f even=%.4f estimate=%.3f",
		stale.overall, stale.resolved, stale.even, continued.Curve(accuracySizes))
	if got.resolved > maxResolvedMAE || got.even > maxResolvedMAE || got.overall > maxOverallMAE {
		t.Errorf("after Reset: MAE overall=%.4f resolved=%.4f even=%.4f, want ≤ %v, %v, %v",
			got.overall, got.resolved, got.even, maxOverallMAE, maxResolvedMAE, maxResolvedMAE)
	}
}
