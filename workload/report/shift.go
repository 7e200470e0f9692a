package report

import (
	"fmt"
	"strings"

	"github.com/distcache/distcache/workload/driver"
)

// shiftBinsBefore is how long before the shift writeShift's bins start;
// maxShiftBins bounds how many it shows.
const (
	shiftBinsBefore = 1.0
	maxShiftBins    = 48
)

// writeShift summarises the hot-set shift of DistCache's window: when,
// the throughput and hit ratios before and after, and the timeline's bins
// from a second before it.
func writeShift(b *strings.Builder, r *driver.Report) {
	s := r.Shift
	if !s.Shifted {
		fmt.Fprintf(b, "hot set (distcache window): not shifted: the measured window ended before %s\n",
			seconds(s.ConfiguredAt))
		return
	}
	fmt.Fprintf(b, "hot set shifted at %s (distcache window; configured %s): ranks map to keys by a second "+
		"permutation (scrambler seed %d) from then on\n", seconds(s.At), seconds(s.ConfiguredAt), s.Seed)
	fmt.Fprintf(b, "  throughput: %s ops/s before the shift, %s after; hit ratio %s before, %s after",
		num(s.Before), num(s.After), hitText(s.HitRatioBefore, "all"), hitText(s.HitRatioAfter, "all"))
	var layers []string
	for _, l := range layerNames(r) {
		_, before := s.HitRatioBefore[l]
		_, after := s.HitRatioAfter[l]
		if before || after {
			layers = append(layers, fmt.Sprintf("%s %s → %s", l, hitText(s.HitRatioBefore, l), hitText(s.HitRatioAfter, l)))
		}
	}
	if len(layers) > 0 {
		fmt.Fprintf(b, " (%s)", strings.Join(layers, ", "))
	}
	b.WriteString("\n")
	var timeline []driver.Point
	for _, m := range r.Modes {
		if m.Mode == driver.DistCache {
			timeline = m.Timeline
		}
	}
	var bins []string
	for i, p := range timeline {
		if p.T < s.At-shiftBinsBefore || len(bins) == maxShiftBins {
			continue
		}
		mark := ""
		if i > 0 && timeline[i-1].T >= s.At {
			mark = "*"
		}
		bin := seconds(p.T) + ":" + num(p.OpsPerSecond)
		if p.HitRatio != nil {
			bin += "/" + fmt.Sprintf("%.0f%%", 100**p.HitRatio)
		}
		bins = append(bins, bin+mark)
	}
	if len(bins) == 0 {
		return
	}
	fmt.Fprintf(b, "  completed ops/s and hit ratio per %s bin (end of bin: rate/hit ratio; * after the shift):\n",
		binText(s.Interval))
	for len(bins) > 0 {
		n := min(8, len(bins))
		fmt.Fprintf(b, "    %s\n", strings.Join(bins[:n], " "))
		bins = bins[n:]
	}
}
