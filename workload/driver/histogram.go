package driver

import (
	"math/bits"
	"time"
)

// The latency histogram is log-linear (as HdrHistogram): values in
// microseconds, exact below 2·subBuckets µs, then subBuckets buckets per
// power of two, so a quantile is within 1/subBuckets (1.6 %) of the truth,
// from 1 µs to beyond a minute in a few thousand buckets. It replaces
// dataplane/loadgen's histogram here: that one is linear up to 100 ms only
// (an open loop near saturation waits longer), and too large (100,001
// buckets) to keep one per worker and merge.
const (
	subBits     = 6
	subBuckets  = 1 << subBits
	maxShift    = 30 // values up to 2^(subBits+1+maxShift) µs: about 38 hours
	histBuckets = (maxShift + 2) * subBuckets
)

// histogram counts latencies. It is not safe for concurrent use: each worker
// has its own, merged at the end.
type histogram struct {
	counts [histBuckets]uint64
	n      uint64
}

// bucket returns the index of the bucket holding v µs.
func bucket(v uint64) int {
	if v < 2*subBuckets {
		return int(v)
	}
	shift := bits.Len64(v) - subBits - 1
	if shift > maxShift {
		return histBuckets - 1
	}
	return (shift+1)*subBuckets + int(v>>uint(shift)) - subBuckets
}

// upper returns the largest value in bucket i, in µs.
func upper(i int) uint64 {
	if i < 2*subBuckets {
		return uint64(i)
	}
	shift := i/subBuckets - 1
	return (uint64(i%subBuckets+subBuckets)+1)<<uint(shift) - 1
}

// record counts d (negative durations count as 0).
func (h *histogram) record(d time.Duration) {
	h.counts[bucket(uint64(max(d, 0)/time.Microsecond))]++
	h.n++
}

// merge adds o's counts to h.
func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
}

// quantile returns the upper bound of the bucket holding quantile q in
// [0, 1] (0 for an empty histogram), rounded up to the next microsecond.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := min(uint64(q*float64(h.n)), h.n-1)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen > rank {
			return time.Duration(upper(i)+1) * time.Microsecond
		}
	}
	return time.Duration(upper(histBuckets-1)+1) * time.Microsecond
}
