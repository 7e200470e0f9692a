package capacity

import (
	"math"
	"testing"
	"time"
)

func TestUtilization(t *testing.T) {
	tests := []struct {
		name   string
		rate   float64
		steps  []time.Duration // advance the clock by each, taking units before it
		units  int             // taken before each step
		wantU  float64
		wantOK bool
	}{
		{name: "unlimited", rate: 0, steps: []time.Duration{time.Second}, units: 10, wantOK: false},
		{name: "no sample completed", rate: 100, steps: []time.Duration{50 * time.Millisecond}, units: 2, wantOK: false},
		{name: "idle", rate: 100, steps: []time.Duration{100 * time.Millisecond}, units: 0, wantU: 0, wantOK: true},
		{name: "half", rate: 100, steps: []time.Duration{100 * time.Millisecond}, units: 5, wantU: 0.5, wantOK: true},
		{name: "saturated", rate: 100, steps: []time.Duration{100 * time.Millisecond, 100 * time.Millisecond}, units: 10, wantU: 1, wantOK: true},
		{name: "a short call keeps the last sample", rate: 100,
			steps: []time.Duration{100 * time.Millisecond, 10 * time.Millisecond}, units: 5, wantU: 0.5, wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newFakeClock()
			l := newLimiter(tt.rate, clk)
			m := newUtilizationMeter(l, 100*time.Millisecond, clk)
			var (
				u  float64
				ok bool
			)
			for _, d := range tt.steps {
				// Units taken at once stay within the burst (1 at rate 100),
				// so take them one per slice of the step.
				for range tt.units {
					l.Take(1)
					clk.advance(d / time.Duration(max(tt.units, 1)))
				}
				if tt.units == 0 {
					clk.advance(d)
				}
				u, ok = m.Utilization()
			}
			if ok != tt.wantOK || ok && math.Abs(u-tt.wantU) > 0.05 {
				t.Fatalf("Utilization() = %.3f, %v; want %.3f, %v", u, ok, tt.wantU, tt.wantOK)
			}
		})
	}
}
