package loadgen

import "time"

// histogramMax is the largest latency recorded exactly; longer ones count
// in the last bucket.
const histogramMax = 100 * time.Millisecond

// Histogram counts latencies in 1 µs buckets up to 100 ms.
type Histogram struct {
	buckets []uint64
	n       uint64
}

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram {
	return &Histogram{buckets: make([]uint64, histogramMax/time.Microsecond+1)}
}

// Record counts d.
func (h *Histogram) Record(d time.Duration) {
	i := min(int(d/time.Microsecond), len(h.buckets)-1)
	h.buckets[max(i, 0)]++
	h.n++
}

// Count is the number of recorded latencies.
func (h *Histogram) Count() uint64 { return h.n }

// Quantile returns the upper bound of the 1 µs bucket holding quantile q
// (0…1), or 100 ms for latencies beyond the range.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := min(uint64(q*float64(h.n)), h.n-1)
	var seen uint64
	for i, c := range h.buckets[:len(h.buckets)-1] {
		seen += c
		if seen > rank {
			return time.Duration(i+1) * time.Microsecond
		}
	}
	return histogramMax // the overflow bucket: at least this long
}
