package mrc

import (
	"math"
	"math/bits"
)

// The reuse histogram has log-linear buckets, as in HDR histograms: every
// distance below exactDistances has a bucket of its own, and each further
// power of two is split into subBuckets buckets of equal width, so a
// distance is placed with a relative error below 1/subBuckets whatever its
// magnitude. Distances of maxDistance or more share the last bucket; with
// the default 8K samples they occur only at sampling rates below 2^-27.
const (
	subBucketBits   = 6
	subBuckets      = 1 << subBucketBits
	exactDistances  = 2 * subBuckets
	maxDistanceBits = 40
	maxDistance     = 1<<maxDistanceBits - 1
	numBuckets      = (maxDistanceBits - subBucketBits + 1) * subBuckets
)

// bucketIndex returns the bucket that holds stack distance d.
func bucketIndex(d uint64) int {
	if d < exactDistances {
		return int(d)
	}
	if d > maxDistance {
		d = maxDistance
	}
	shift := bits.Len64(d) - subBucketBits - 1
	return shift*subBuckets + int(d>>shift)
}

// bucketBounds returns the smallest distance in bucket i and the number of
// distances the bucket covers.
func bucketBounds(i int) (lower, width uint64) {
	if i < exactDistances {
		return uint64(i), 1
	}
	shift := i/subBuckets - 1
	mantissa := uint64(i%subBuckets + subBuckets)
	return mantissa << shift, 1 << shift
}

// histogram accumulates the weight of sampled references by estimated LRU
// stack distance. A reference sampled at rate R weighs 1/R: it stands for
// the 1/R references of the full stream that it represents.
type histogram struct {
	reuse   [numBuckets]float64 // weight of re-references by stack distance
	cold    float64             // weight of first references (cold misses)
	total   float64             // sum of reuse and cold
	highest int                 // highest non-empty reuse bucket, or -1
}

func (h *histogram) reset() {
	clear(h.reuse[:])
	h.cold, h.total, h.highest = 0, 0, -1
}

func (h *histogram) addCold(weight float64) {
	h.cold += weight
	h.total += weight
}

// addReuse records a re-reference at the given stack distance (≥ 1).
func (h *histogram) addReuse(distance, weight float64) {
	d := uint64(maxDistance)
	if distance < maxDistance {
		d = uint64(distance)
	}
	i := bucketIndex(d)
	h.reuse[i] += weight
	h.total += weight
	h.highest = max(h.highest, i)
}

// largestDistance returns the upper end of the highest non-empty bucket:
// the cache size beyond which the curve is flat (only cold misses remain).
func (h *histogram) largestDistance() uint64 {
	if h.highest < 0 {
		return 0
	}
	lower, width := bucketBounds(h.highest)
	return lower + width - 1
}

// curveEvaluator answers miss-ratio queries from a histogram's cumulative
// weights; it is a copy, so it can be used after the lock is released.
type curveEvaluator struct {
	cumulative []float64 // cumulative[i]: reuse weight of buckets < i
	reuse      []float64 // reuse weight of buckets ≤ highest
	deficit    float64   // SHARDS adjustment: weight credited as hits
	resolution float64   // 1/rate: the deficit is spread over [1, resolution]
	references float64   // denominator: the histogram's weight plus deficit
}

// newCurveEvaluator prepares the miss-ratio queries of h. observed is the
// number of references of the full stream and rate the current sampling
// rate. When adjust is set, the difference between observed and the
// histogram's total weight is credited as hits (SHARDS_adj). SHARDS adds it
// to the first histogram bucket; distances are resolved only to 1/rate, so
// the first bucket is taken to be [1, 1/rate] and the deficit is spread
// evenly over it rather than put at distance 1.
func newCurveEvaluator(h *histogram, observed uint64, rate float64, adjust bool) curveEvaluator {
	n := h.highest + 1
	ev := curveEvaluator{
		cumulative: make([]float64, n+1),
		reuse:      make([]float64, n),
		resolution: 1 / rate,
		references: h.total,
	}
	copy(ev.reuse, h.reuse[:n])
	for i, w := range ev.reuse {
		ev.cumulative[i+1] = ev.cumulative[i] + w
	}
	if adjust && observed > 0 && h.total > 0 {
		ev.deficit = float64(observed) - h.total
		ev.references = float64(observed)
	}
	return ev
}

// missRatio returns the estimated miss ratio of an LRU cache of size
// entries. Within a bucket the distances are taken as evenly spread.
func (ev *curveEvaluator) missRatio(size int) float64 {
	if size <= 0 || ev.references <= 0 {
		return 1
	}
	hits := ev.deficit * min(1, float64(size)/ev.resolution)
	c := uint64(size)
	i := bucketIndex(c)
	if i >= len(ev.reuse) {
		hits += ev.cumulative[len(ev.reuse)]
	} else {
		lower, width := bucketBounds(i)
		covered := float64(min(c, maxDistance)-lower+1) / float64(width)
		hits += ev.cumulative[i] + ev.reuse[i]*covered
	}
	ratio := 1 - hits/ev.references
	if math.IsNaN(ratio) {
		return 1
	}
	return min(max(ratio, 0), 1)
}
