package workload

import (
	"fmt"
	"math"
	"testing"
)

// neumaier is a compensated (Kahan–Babuška–Neumaier) running sum, so that
// the brute-force references are accurate to a few ulps even over 10^7
// terms.
type neumaier struct{ sum, c float64 }

func (a *neumaier) add(x float64) {
	t := a.sum + x
	if math.Abs(a.sum) >= math.Abs(x) {
		a.c += (a.sum - t) + x
	} else {
		a.c += (x - t) + a.sum
	}
	a.sum = t
}

func (a *neumaier) value() float64 { return a.sum + a.c }

func relErr(got, want float64) float64 {
	if want == 0 {
		return math.Abs(got)
	}
	return math.Abs(got-want) / math.Abs(want)
}

func TestProbabilitySumsToOne(t *testing.T) {
	for _, s := range testExponents {
		for _, n := range []uint64{1, 2, 3, 10, 31, 32, 33, 100, 1000, 100_000} {
			z, err := NewZipf(n, s)
			if err != nil {
				t.Fatal(err)
			}
			var sum neumaier
			for r := range n {
				sum.add(z.Probability(r))
			}
			if got := sum.value(); math.Abs(got-1) > sumTol {
				t.Errorf("s=%v n=%d: Σ Probability = %.17g, want 1", s, n, got)
			}
			if p := z.Probability(n); p != 0 {
				t.Errorf("s=%v n=%d: Probability(n) = %v, want 0", s, n, p)
			}
		}
	}
}

// TestCumulativeTopBruteForce compares Probability and CumulativeTop with
// compensated brute-force sums over the whole key space.
func TestCumulativeTopBruteForce(t *testing.T) {
	for _, s := range testExponents {
		for _, n := range []uint64{1, 7, 31, 32, 33, 1000, 1_000_000} {
			t.Run(fmt.Sprintf("s=%v/n=%d", s, n), func(t *testing.T) {
				t.Parallel()
				z, err := NewZipf(n, s)
				if err != nil {
					t.Fatal(err)
				}
				terms := make([]float64, n)
				var total neumaier
				for i := range n {
					terms[i] = math.Pow(float64(i+1), -s)
					total.add(terms[i])
				}
				h := total.value()
				if got := z.CumulativeTop(0); got != 0 {
					t.Errorf("CumulativeTop(0) = %v, want 0", got)
				}
				var prefix neumaier
				for k := uint64(1); k <= n; k++ {
					prefix.add(terms[k-1])
					if k > 2000 && k%1009 != 0 && k != n-1 {
						continue
					}
					if got, want := z.CumulativeTop(k), prefix.value()/h; relErr(got, want) > probTol {
						t.Fatalf("CumulativeTop(%d) = %.17g, want %.17g (relative error %.2g)", k, got, want, relErr(got, want))
					}
					if got, want := z.Probability(k-1), terms[k-1]/h; relErr(got, want) > probTol {
						t.Fatalf("Probability(%d) = %.17g, want %.17g", k-1, got, want)
					}
				}
				for _, k := range []uint64{n, n + 1, math.MaxUint64} {
					if got := z.CumulativeTop(k); got != 1 {
						t.Errorf("CumulativeTop(%d) = %v, want 1", k, got)
					}
				}
			})
		}
	}
}

// TestHarmonicBruteForce checks the Euler–Maclaurin normaliser against a
// compensated brute-force sum of 10^7 terms.
func TestHarmonicBruteForce(t *testing.T) {
	const n = 10_000_000
	for _, s := range []float64{0.3, 0.9, 0.99, 1, 1.01, 1.5} {
		t.Run(fmt.Sprintf("s=%v", s), func(t *testing.T) {
			t.Parallel()
			var sum neumaier
			for i := n; i >= 1; i-- {
				sum.add(math.Pow(float64(i), -s))
			}
			if got, want := harmonic(n, s), sum.value(); relErr(got, want) > probTol {
				t.Errorf("H(%d, %v) = %.17g, brute force %.17g (relative error %.2g)", n, s, got, want, relErr(got, want))
			}
		})
	}
}

// TestHarmonicAsymptotics checks H(2^40, s), far beyond brute force, against
// the asymptotic expansions with independently known constants.
func TestHarmonicAsymptotics(t *testing.T) {
	const (
		zetaHalf      = -1.4603545088095868128894991525152980125 // ζ(1/2)
		zetaThreeHalf = 2.6123753486854883433485675679240716305  // ζ(3/2)
		eulerGamma    = 0.57721566490153286060651209008240243104 // γ
	)
	n := float64(1 << 40)
	for _, tc := range []struct {
		s    float64
		want float64
	}{
		// H(n,s) = ζ(s) + n^(1-s)/(1-s) + n^-s/2 - s n^(-s-1)/12 + …
		{0.5, 2*math.Sqrt(n) + zetaHalf + 0.5/math.Sqrt(n)},
		{1.5, zetaThreeHalf - 2/math.Sqrt(n) + 0.5*math.Pow(n, -1.5)},
		// H(n,1) = log n + γ + 1/(2n) - 1/(12n²) + …
		{1, math.Log(n) + eulerGamma + 0.5/n},
		{0, n},
	} {
		if got := harmonic(1<<40, tc.s); relErr(got, tc.want) > asympTol {
			t.Errorf("H(2^40, %v) = %.17g, want %.17g (relative error %.2g)", tc.s, got, tc.want, relErr(got, tc.want))
		}
	}
}

// TestHarmonicContinuousAtOne checks that the normaliser has no jump or
// cancellation as s crosses 1: |dH/ds| / H = Σ log(i) i^-s / H < log n, so
// a step of eps in s moves H by less than 30 eps relative for n <= 2^40.
func TestHarmonicContinuousAtOne(t *testing.T) {
	for _, n := range []uint64{100, 1_000_000, 1 << 40} {
		h1 := harmonic(n, 1)
		for _, eps := range []float64{1e-6, 1e-9, 1e-12, 1e-15} {
			lo, hi := harmonic(n, 1-eps), harmonic(n, 1+eps)
			bound := 30*eps + 1e-14
			if relErr(lo, h1) > bound || relErr(hi, h1) > bound || (eps >= 1e-9 && !(lo > h1 && h1 > hi)) {
				t.Errorf("n=%d: H(1-%v) = %.17g, H(1) = %.17g, H(1+%v) = %.17g", n, eps, lo, h1, eps, hi)
			}
		}
	}
}
