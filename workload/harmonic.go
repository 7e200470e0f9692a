package workload

import "math"

// emStart is the first index handled by the Euler–Maclaurin formula in
// harmonic; the terms 1..emStart-1 are summed directly. At emStart = 32 the
// first omitted Bernoulli term is below 1e-20 for every s in [0, 1.5], so
// the truncation error is far below the rounding error of the result.
const emStart = 32

// bernoulliCoef[j] is B_{2(j+1)} / (2(j+1))!, the coefficient of the
// (2j+1)-th derivative in the Euler–Maclaurin formula.
var bernoulliCoef = [...]float64{
	1.0 / 12,
	-1.0 / 720,
	1.0 / 30240,
	-1.0 / 1209600,
	1.0 / 47900160,
	-691.0 / 1307674368000,
}

// helper1 returns log1p(x)/x, continued by its Taylor series near 0.
func helper1(x float64) float64 {
	if math.Abs(x) > 1e-8 {
		return math.Log1p(x) / x
	}
	return 1 - x*(0.5-x*(1.0/3-0.25*x))
}

// helper2 returns expm1(x)/x, continued by its Taylor series near 0.
func helper2(x float64) float64 {
	if math.Abs(x) > 1e-8 {
		return math.Expm1(x) / x
	}
	return 1 + x*0.5*(1+x/3*(1+0.25*x))
}

// harmonic returns the generalised harmonic number Σ_{i=1..m} i^-s for
// s >= 0 (0 for m == 0). It costs O(1): at most emStart-1 powers plus a
// constant number of transcendental functions.
func harmonic(m uint64, s float64) float64 {
	if s == 0 {
		return float64(m)
	}
	if m < emStart {
		return directSum(1, m, s)
	}
	return directSum(1, emStart-1, s) + eulerMaclaurin(emStart, m, s)
}

// directSum returns Σ_{i=lo..hi} i^-s, adding the smallest terms first.
func directSum(lo, hi uint64, s float64) float64 {
	sum := 0.0
	for i := hi; i >= lo && i > 0; i-- {
		sum += math.Pow(float64(i), -s)
	}
	return sum
}

// eulerMaclaurin returns Σ_{i=a..b} i^-s for 1 <= a <= b by the
// Euler–Maclaurin formula:
//
//	∫_a^b f + (f(a)+f(b))/2 + Σ_j B_2j/(2j)! (f^(2j-1)(b) - f^(2j-1)(a))
//
// with f(x) = x^-s and f^(2j-1)(x) = -s(s+1)…(s+2j-2) x^(-s-2j+1).
func eulerMaclaurin(a, b uint64, s float64) float64 {
	fa, fb := float64(a), float64(b)
	powA, powB := math.Pow(fa, -s), math.Pow(fb, -s)
	// ∫_a^b x^-s dx = a^(1-s) (exp((1-s) L) - 1)/(1-s) with L = log(b/a),
	// written with expm1(x)/x so that it is stable through s = 1.
	l := math.Log(fb / fa)
	sum := fa * powA * l * helper2((1-s)*l)
	sum += 0.5 * (powA + powB)
	// dA and dB hold f^(2j-1)(a) and f^(2j-1)(b) for j = 1, 2, ...
	dA, dB := -s*powA/fa, -s*powB/fb
	corr := 0.0
	for j, c := range bernoulliCoef {
		corr += c * (dB - dA)
		k := float64(2*j + 1) // next derivative multiplies by (s+k)(s+k+1)/x²
		m := (s + k) * (s + k + 1)
		dA *= m / (fa * fa)
		dB *= m / (fb * fb)
	}
	return sum + corr
}
