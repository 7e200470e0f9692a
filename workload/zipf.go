package workload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// Limits of NewZipf. Ranks up to 2^40 keep every 1-based rank and its
// half-integer neighbours exactly representable with ample float64 headroom;
// s <= 1.5 covers the skews used in the DistCache evaluation and beyond.
const (
	maxZipfExponent = 1.5
	maxZipfN        = 1 << 40
)

// errInvalidParameter is wrapped by every parameter error of this package.
var errInvalidParameter = errors.New("invalid parameter")

// Zipf samples ranks in [0, n) with P(rank = i) ∝ 1/(i+1)^s, for s in
// [0, 1.5] (s == 0 is the uniform distribution) and n in [1, 2^40], without
// materialising the key space. A Zipf is immutable: it is safe to share one
// between goroutines, each using its own *rand.Rand.
type Zipf struct {
	n    uint64
	nf   float64 // float64(n), exact for n <= 2^53
	s    float64
	oms  float64 // 1 - s
	norm float64 // H(n, s) = Σ_{i=1..n} i^-s

	// Rejection-inversion constants, in the 1-based rank space k = rank+1.
	hX1     float64 // H(1.5) - h(1) = H(1.5) - 1: lower end of u
	hN      float64 // H(n + 0.5): upper end of u
	squeeze float64 // candidates with k - x <= squeeze are accepted at once
}

// NewZipf returns a sampler of n ranks with exponent s. It fails with a
// "cannot create Zipf sampler" error if n is 0 or above 2^40, or if s is
// NaN or outside [0, 1.5].
func NewZipf(n uint64, s float64) (*Zipf, error) {
	switch {
	case n == 0 || n > maxZipfN:
		return nil, fmt.Errorf("cannot create Zipf sampler: %w: n = %d, want 1 <= n <= 2^40", errInvalidParameter, n)
	case math.IsNaN(s) || s < 0 || s > maxZipfExponent:
		return nil, fmt.Errorf("cannot create Zipf sampler: %w: exponent s = %v, want 0 <= s <= %v", errInvalidParameter, s, maxZipfExponent)
	}
	z := &Zipf{n: n, nf: float64(n), s: s, oms: 1 - s, norm: harmonic(n, s)}
	z.hX1 = z.hIntegral(1.5) - 1
	z.hN = z.hIntegral(z.nf + 0.5)
	z.squeeze = 2 - z.hIntegralInverse(z.hIntegral(2.5)-z.h(2))
	return z, nil
}

// N returns the number of ranks.
func (z *Zipf) N() uint64 { return z.n }

// S returns the exponent.
func (z *Zipf) S() float64 { return z.s }

// Sample returns a rank in [0, n). It does not allocate and only reads z.
func (z *Zipf) Sample(r *rand.Rand) uint64 {
	if z.n == 1 {
		return 0
	}
	if z.s == 0 {
		return r.Uint64N(z.n)
	}
	for {
		// u is uniform on (hX1, hN]; the part of (H(k-1/2), H(k+1/2)]
		// above H(k+1/2) - h(k) has measure h(k) for every k in [1, n]
		// (for k = 1 it is the whole interval (hX1, H(1.5)]), so accepting
		// exactly that part yields P(k) ∝ h(k).
		u := z.hN + r.Float64()*(z.hX1-z.hN)
		x := z.hIntegralInverse(u)
		k := math.Floor(x + 0.5)
		if k < 1 {
			k = 1
		} else if k > z.nf {
			k = z.nf
		}
		if k-x <= z.squeeze || u >= z.hIntegral(k+0.5)-z.h(k) {
			return uint64(k) - 1
		}
	}
}

// Probability returns the exact probability (rank+1)^-s / H(n,s) of rank,
// or 0 if rank >= n.
func (z *Zipf) Probability(rank uint64) float64 {
	if rank >= z.n {
		return 0
	}
	if z.s == 0 {
		return 1 / z.nf
	}
	return math.Pow(float64(rank)+1, -z.s) / z.norm
}

// CumulativeTop returns P(rank < k), the share of the requests that go to
// the k hottest ranks: H(k,s)/H(n,s), or 1 for k >= n. It costs O(1).
func (z *Zipf) CumulativeTop(k uint64) float64 {
	if k >= z.n {
		return 1
	}
	if z.s == 0 {
		return float64(k) / z.nf
	}
	return math.Min(harmonic(k, z.s)/z.norm, 1)
}

// h is the unnormalised mass x^-s of the 1-based rank x.
func (z *Zipf) h(x float64) float64 { return math.Exp(-z.s * math.Log(x)) }

// hIntegral is H(x) = (x^(1-s) - 1)/(1-s), an antiderivative of h that
// tends to log(x) as s → 1.
func (z *Zipf) hIntegral(x float64) float64 {
	logX := math.Log(x)
	return helper2(z.oms*logX) * logX
}

// hIntegralInverse is the inverse of hIntegral:
// exp(log1p((1-s) u) / (1-s)).
func (z *Zipf) hIntegralInverse(u float64) float64 {
	t := u * z.oms
	if t < -1 {
		// Only reachable through rounding for s > 1, where H is bounded
		// above by 1/(s-1); clamp to keep log1p finite-or-infinite, not NaN.
		t = -1
	}
	return math.Exp(helper1(t) * u)
}
