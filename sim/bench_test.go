package sim

import (
	"fmt"
	"testing"
)

// BenchmarkEvaluateScale times one point of the scale experiment (every
// strategy at the paper's defaults) at 32 racks, the baseline, and at 1,024
// racks (32,768 servers, 2,048 cache nodes).
func BenchmarkEvaluateScale(b *testing.B) {
	for _, racks := range []int{32, 1024} {
		b.Run(fmt.Sprintf("racks=%d", racks), func(b *testing.B) {
			cfg := Default()
			cfg.Racks, cfg.Spines = racks, racks
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Evaluate(cfg, Strategies); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
