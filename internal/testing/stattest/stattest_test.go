package stattest

import (
	"math"
	"testing"
)

func TestChiSquareCritical(t *testing.T) {
	// Reference quantiles of the chi-square distribution.
	for _, tc := range []struct {
		df    int
		alpha float64
		want  float64
	}{
		{10, 0.05, 18.307},
		{20, 0.001, 45.315},
		{30, 0.001, 59.703},
		{100, 0.01, 135.807},
	} {
		if got := ChiSquareCritical(tc.df, tc.alpha); math.Abs(got-tc.want)/tc.want > 0.005 {
			t.Errorf("ChiSquareCritical(%d, %v) = %v, want %v", tc.df, tc.alpha, got, tc.want)
		}
	}
}
