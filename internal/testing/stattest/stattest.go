// Package stattest holds the statistical checks the tests of the placement
// core share: Pearson's chi-square statistic and its critical values.
package stattest

import "math"

// ChiSquare returns Pearson's statistic Σ (observed-expected)²/expected over
// cells with a positive expectation.
func ChiSquare(observed []float64, expected []float64) float64 {
	var x float64
	for i, e := range expected {
		if e <= 0 {
			continue
		}
		d := observed[i] - e
		x += d * d / e
	}
	return x
}

// ChiSquareCritical returns the value a chi-square variable with dof degrees
// of freedom exceeds with probability alpha, by the Wilson–Hilferty cube
// approximation (accurate to well under 1% for dof >= 3).
func ChiSquareCritical(dof int, alpha float64) float64 {
	k := float64(dof)
	z := normalQuantile(1 - alpha)
	t := 1 - 2/(9*k) + z*math.Sqrt(2/(9*k))
	return k * t * t * t
}

// normalQuantile is the inverse of the standard normal CDF.
func normalQuantile(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }
