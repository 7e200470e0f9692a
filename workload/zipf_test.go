package workload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/distcache/distcache/internal/testing/stattest"
)

// testExponents and testSizes are the grid of the goodness-of-fit tests.
var (
	testExponents = []float64{0, 0.5, 0.9, 0.99, 1.0, 1.01, 1.2, 1.5}
	testSizes     = []uint64{10, 1000, 100_000_000}
)

const (
	gofSamples  = 2_000_000
	gofTopRanks = 20     // ranks tested individually (when expected >= gofMinExpected)
	gofMinCount = 50.0   // minimum expected count of a chi-square bin
	gofAlpha    = 0.001  // significance level of each goodness-of-fit test
	probTol     = 1e-9   // required relative accuracy of H, Probability, CumulativeTop
	sumTol      = 1e-12  // Σ Probability over a small key space
	asympTol    = 1e-12  // H(2^40, s) against the zeta/Euler–Mascheroni asymptotics
	zipfSeed    = 0x5eed // base PCG seed of the sampling tests
)

// bin is a half-open rank range [lo, hi) with probability p.
type bin struct {
	lo, hi uint64
	p      float64
}

// gofBins partitions [0, n) into the top gofTopRanks single ranks followed by
// geometrically growing ranges, merging neighbours until every bin expects
// at least gofMinCount of the samples draws.
func gofBins(t *testing.T, z *Zipf, samples int) []bin {
	t.Helper()
	n := z.N()
	var cuts []uint64
	for c := uint64(0); c < n && c <= gofTopRanks; c++ {
		cuts = append(cuts, c)
	}
	for c := uint64(2 * gofTopRanks); c < n; c *= 2 {
		cuts = append(cuts, c)
	}
	cuts = append(cuts, n)
	prob := func(lo, hi uint64) float64 {
		if hi-lo == 1 {
			return z.Probability(lo)
		}
		return z.CumulativeTop(hi) - z.CumulativeTop(lo)
	}
	var bins []bin
	lo := uint64(0)
	for _, hi := range cuts[1:] {
		if p := prob(lo, hi); p*float64(samples) >= gofMinCount {
			bins = append(bins, bin{lo, hi, p})
			lo = hi
		}
	}
	if lo < n { // fold the remainder into the last bin
		last := &bins[len(bins)-1]
		last.hi = n
		last.p = prob(last.lo, n)
	}
	total := 0.0
	for _, b := range bins {
		total += b.p
	}
	if math.Abs(total-1) > probTol {
		t.Fatalf("bin probabilities sum to %v, want 1", total)
	}
	return bins
}

// chiSquare draws samples ranks with draw, asserts they are in [0, n), and
// returns the chi-square statistic against bins and its degrees of freedom.
func chiSquare(t *testing.T, n uint64, bins []bin, samples int, draw func() uint64) (stat float64, df int) {
	t.Helper()
	counts := make([]int, len(bins))
	for range samples {
		r := draw()
		if r >= n {
			t.Fatalf("sample %d out of range [0, %d)", r, n)
		}
		i, j := 0, len(bins)-1 // find the bin with lo <= r < hi
		for i < j {
			m := (i + j) / 2
			if r >= bins[m].hi {
				i = m + 1
			} else {
				j = m
			}
		}
		counts[i]++
	}
	for i, b := range bins {
		e := b.p * float64(samples)
		d := float64(counts[i]) - e
		stat += d * d / e
	}
	return stat, len(bins) - 1
}

func TestZipfGoodnessOfFit(t *testing.T) {
	for i, s := range testExponents {
		for j, n := range testSizes {
			t.Run(fmt.Sprintf("s=%v/n=%d", s, n), func(t *testing.T) {
				t.Parallel()
				z, err := NewZipf(n, s)
				if err != nil {
					t.Fatal(err)
				}
				bins := gofBins(t, z, gofSamples)
				rng := rand.New(rand.NewPCG(zipfSeed, uint64(i*len(testSizes)+j)))
				stat, df := chiSquare(t, n, bins, gofSamples, func() uint64 { return z.Sample(rng) })
				crit := stattest.ChiSquareCritical(df, gofAlpha)
				t.Logf("chi-square = %.1f, df = %d, critical = %.1f", stat, df, crit)
				if stat > crit {
					t.Errorf("chi-square = %.1f with %d degrees of freedom, critical value %.1f at alpha = %v", stat, df, crit, gofAlpha)
				}
			})
		}
	}
}

// graySample is the generator of Gray et al. (SIGMOD '94) used by YCSB,
// with the zeta sums taken from harmonic. It is a negative control: the
// goodness-of-fit test must reject it.
func graySample(n uint64, theta float64) func(r *rand.Rand) uint64 {
	zetaN := harmonic(n, theta)
	zeta2 := 1 + math.Pow(0.5, theta)
	alpha := 1 / (1 - theta)
	eta := (1 - math.Pow(2/float64(n), 1-theta)) / (1 - zeta2/zetaN)
	return func(r *rand.Rand) uint64 {
		u := r.Float64()
		uz := u * zetaN
		switch {
		case uz < 1:
			return 0
		case uz < zeta2:
			return 1
		}
		return min(uint64(float64(n)*math.Pow(eta*u-eta+1, alpha)), n-1)
	}
}

// TestGoodnessOfFitHasPower checks that the goodness-of-fit test detects
// samplers that are slightly off: a neighbouring exponent and the Gray et
// al. approximation.
func TestGoodnessOfFitHasPower(t *testing.T) {
	const n, s = 100_000_000, 0.99
	z, err := NewZipf(n, s)
	if err != nil {
		t.Fatal(err)
	}
	near, err := NewZipf(n, 0.98)
	if err != nil {
		t.Fatal(err)
	}
	gray := graySample(n, s)
	for _, tc := range []struct {
		name string
		draw func(*rand.Rand) uint64
	}{
		{"s=0.98", near.Sample},
		{"gray", gray},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bins := gofBins(t, z, gofSamples)
			rng := rand.New(rand.NewPCG(zipfSeed, 1000))
			stat, df := chiSquare(t, n, bins, gofSamples, func() uint64 { return tc.draw(rng) })
			crit := stattest.ChiSquareCritical(df, gofAlpha)
			t.Logf("chi-square = %.1f, df = %d, critical = %.1f", stat, df, crit)
			if stat <= crit {
				t.Errorf("chi-square = %.1f with %d degrees of freedom did not exceed %.1f: the test cannot tell %s from Zipf(%v)", stat, df, crit, tc.name, s)
			}
		})
	}
}

func TestNewZipfRejectsBadParameters(t *testing.T) {
	for _, tc := range []struct {
		n  uint64
		s  float64
		ok bool
	}{
		{0, 1, false},
		{maxZipfN + 1, 1, false},
		{math.MaxUint64, 0.5, false},
		{10, -0.01, false},
		{10, math.Nextafter(1.5, 2), false},
		{10, 2, false},
		{10, math.NaN(), false},
		{10, math.Inf(1), false},
		{10, math.Inf(-1), false},
		{1, 0, true},
		{1, 1.5, true},
		{10, 0, true},
		{10, 1.5, true},
		{maxZipfN, 0.99, true},
	} {
		z, err := NewZipf(tc.n, tc.s)
		switch {
		case tc.ok && err != nil:
			t.Errorf("NewZipf(%d, %v) failed: %v", tc.n, tc.s, err)
		case tc.ok && (z.N() != tc.n || z.S() != tc.s):
			t.Errorf("NewZipf(%d, %v) = sampler with N = %d, S = %v", tc.n, tc.s, z.N(), z.S())
		case !tc.ok && err == nil:
			t.Errorf("NewZipf(%d, %v) succeeded, want error", tc.n, tc.s)
		case !tc.ok && (!errors.Is(err, errInvalidParameter) || !strings.HasPrefix(err.Error(), "cannot create Zipf sampler: ")):
			t.Errorf("NewZipf(%d, %v) error %q does not wrap errInvalidParameter with the expected prefix", tc.n, tc.s, err)
		}
	}
}

func TestZipfSingleRank(t *testing.T) {
	for _, s := range testExponents {
		z, err := NewZipf(1, s)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(zipfSeed, 1))
		for range 100 {
			if r := z.Sample(rng); r != 0 {
				t.Fatalf("s=%v: Sample = %d on a single rank", s, r)
			}
		}
		if p := z.Probability(0); p != 1 {
			t.Errorf("s=%v: Probability(0) = %v, want 1", s, p)
		}
	}
}

func TestZipfSampleDoesNotAllocate(t *testing.T) {
	for _, s := range []float64{0, 0.99, 1} {
		z, err := NewZipf(100_000_000, s)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(zipfSeed, 2))
		if a := testing.AllocsPerRun(1000, func() { z.Sample(rng) }); a != 0 {
			t.Errorf("s=%v: Sample allocates %v times per call", s, a)
		}
	}
}

// TestZipfConcurrentSample shares one Zipf between goroutines (meaningful
// under -race) and checks each goroutine gets the same stream as a
// sequential run with the same seed.
func TestZipfConcurrentSample(t *testing.T) {
	z, err := NewZipf(100_000_000, 0.99)
	if err != nil {
		t.Fatal(err)
	}
	const workers, draws = 4, 10_000
	var wg sync.WaitGroup
	got := make([][]uint64, workers)
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(zipfSeed, uint64(w)))
			for range draws {
				got[w] = append(got[w], z.Sample(rng))
			}
		})
	}
	wg.Wait()
	for w := range workers {
		rng := rand.New(rand.NewPCG(zipfSeed, uint64(w)))
		for i := range draws {
			if want := z.Sample(rng); got[w][i] != want {
				t.Fatalf("worker %d draw %d = %d, sequential draw = %d", w, i, got[w][i], want)
			}
		}
	}
}

// TestZipfSqueeze checks the premise of the squeeze in Sample: the
// acceptance region of every rank k >= 2 in x-space, [H⁻¹(H(k+½)-h(k)),
// k+½], contains [k - squeeze, k+½].
func TestZipfSqueeze(t *testing.T) {
	for _, s := range []float64{1e-9, 0.01, 0.5, 0.99, 1, 1.01, 1.5} {
		z, err := NewZipf(1<<40, s)
		if err != nil {
			t.Fatal(err)
		}
		if z.squeeze <= 0 || z.squeeze > 0.5 {
			t.Errorf("s=%v: squeeze = %v, want in (0, 0.5]", s, z.squeeze)
		}
		for k := 2.0; k < 1e7; k = math.Floor(k*1.01) + 1 {
			lower := z.hIntegralInverse(z.hIntegral(k+0.5) - z.h(k))
			if k-lower < z.squeeze-1e-12*k {
				t.Fatalf("s=%v k=%v: k - lower end of the acceptance region = %v < squeeze %v", s, k, k-lower, z.squeeze)
			}
		}
	}
}

// TestHIntegralNearOne checks H and its inverse through s = 1, where the
// closed form (x^(1-s) - 1)/(1-s) cancels catastrophically.
func TestHIntegralNearOne(t *testing.T) {
	for _, s := range []float64{1 - 1e-6, 1 - 1e-10, 1, 1 + 1e-10, 1 + 1e-6, 0.99, 1.01} {
		z := &Zipf{s: s, oms: 1 - s}
		for _, x := range []float64{0.5, 1.5, 2, 10, 1e4, 1e8 + 0.5, 1 << 40} {
			l := math.Log(x)
			want := l // H(x) for s = 1, plus the first-order term in 1-s:
			want += (1 - s) * l * l / 2
			if got := z.hIntegral(x); math.Abs(got-want) > 1e-12*math.Abs(want)+(1-s)*(1-s)*math.Abs(l*l*l) {
				t.Errorf("s=%v: H(%v) = %v, want ≈ %v", s, x, got, want)
			}
			if back := z.hIntegralInverse(z.hIntegral(x)); math.Abs(back-x) > 1e-12*x {
				t.Errorf("s=%v: H⁻¹(H(%v)) = %v", s, x, back)
			}
		}
	}
}
