package hotkey

import "math"

// The adaptive threshold (Config.Threshold 0).
//
// A fixed threshold is a rate: 128 misses per one-second interval reports
// only keys read 128 times a second at one node. A cluster whose hottest
// key is read less often than that caches nothing, however skewed its
// reads, and one that is much busier reports far more keys than it can
// insert. The adaptive threshold follows the traffic instead. At the end
// of every interval the next threshold is:
//
//   - doubled when the interval dropped reports (more keys crossed it
//     than Config.MaxReports: the report list holds the first keys to
//     cross, not the hottest);
//   - halved when fewer than a quarter of MaxReports crossed it (room to
//     report keys that are less hot);
//   - kept otherwise, so a skewed workload (reports about inversely
//     proportional to the threshold) settles instead of oscillating;
//   - never below the sketch's noise floor, e·N/w for N misses in the
//     interval and w counters per row: the Count-Min bound (package doc)
//     by which a key's estimate may exceed its true count, so a key that
//     crosses the threshold was really read about that often; nor below
//     MinThreshold, so a key read once per interval is never a candidate;
//     nor above MaxThreshold.
//
// The threshold starts at MinThreshold: an idle node reports a key read
// twice in an interval, and a busy one reaches its level within a few
// intervals (from 2 to 128 in six).

// sub is the counters of s since o.
func (s Stats) sub(o Stats) Stats {
	return Stats{Misses: s.Misses - o.Misses, Hits: s.Hits - o.Hits, Reports: s.Reports - o.Reports,
		DroppedReports: s.DroppedReports - o.DroppedReports, Intervals: s.Intervals - o.Intervals}
}

// nextThreshold is the threshold that follows t after an interval with
// the counters in, for a sketch of width counters per row and a report
// list of maxReports.
func nextThreshold(t uint32, in Stats, width uint64, maxReports int) uint32 {
	next := uint64(t)
	switch {
	case in.DroppedReports > 0:
		next *= 2
	case in.Reports < uint64(maxReports)/4:
		next /= 2
	}
	floor := uint64(math.Ceil(math.E * float64(in.Misses) / float64(width)))
	return uint32(min(max(next, floor, MinThreshold), MaxThreshold))
}
