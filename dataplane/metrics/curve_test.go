package metrics

import (
	"math"
	"testing"
)

func TestMissRatioAt(t *testing.T) {
	curve := MissRatioCurve{Entries: 10, Points: []CurvePoint{
		{Entries: 1, MissRatio: 0.9}, {Entries: 10, MissRatio: 0.45}, {Entries: 40, MissRatio: 0.15},
	}}
	tests := []struct {
		name    string
		curve   MissRatioCurve
		entries int
		want    float64
	}{
		{name: "no cache", curve: curve, entries: 0, want: 1},
		{name: "negative", curve: curve, entries: -3, want: 1},
		{name: "first point", curve: curve, entries: 1, want: 0.9},
		{name: "a point", curve: curve, entries: 10, want: 0.45},
		{name: "between points", curve: curve, entries: 20, want: 0.35},
		{name: "last point", curve: curve, entries: 40, want: 0.15},
		{name: "past the last point", curve: curve, entries: 1000, want: 0.15},
		{name: "between size 0 and the first point", entries: 2,
			curve: MissRatioCurve{Points: []CurvePoint{{Entries: 4, MissRatio: 0.6}}}, want: 0.8},
		{name: "no points", curve: MissRatioCurve{}, entries: 5, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.curve.MissRatioAt(tt.entries); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("MissRatioAt(%d) = %v, want %v", tt.entries, got, tt.want)
			}
		})
	}
}
