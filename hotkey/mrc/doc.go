// Package mrc estimates the LRU miss-ratio curve (MRC) of a cache node's
// live request stream: for every cache size, the fraction of requests an
// LRU cache of that many entries would miss. It serves D3N-style layer
// sizing: a control loop re-evaluates the curves periodically and resizes
// the cache layers from them, as D3N adapts the sizes of its cache layers
// to the workload.
//
// # Algorithm
//
// [Estimator] implements SHARDS, fixed-size variant (Waldspurger, Park,
// Garthwaite and Ahmad, "Efficient MRC Construction with SHARDS", FAST
// '15):
//
//   - Spatial sampling. Each key is hashed with XXH64; a key is sampled
//     iff its hash is below a threshold T, so the sampling rate is
//     R = T/2^64 and every reference to a sampled key is seen. The reuse
//     distances among the sampled keys, scaled by 1/R, estimate those of
//     the full stream.
//   - Fixed-size sample set. At most Config.MaxSamples keys are kept. When
//     a new key would exceed that, the key with the largest hash is evicted
//     and T is lowered to its hash, so R only falls and the sample stays a
//     uniform spatial sample of the keys seen.
//   - Stack distances. Every sampled key keeps the timestamp of its last
//     reference, and a Fenwick tree over the timestamps counts the distinct
//     sampled keys referenced since then (Olken's method): O(log S) per
//     sampled reference for S samples. Timestamps are renumbered when they
//     run out, in O(S) once per S or more sampled references.
//   - Scaling. A reuse after k other sampled keys lies at a distance in
//     [1 + k/R, 1 + (k+1)/R); it is recorded at 1 + (k+u)/R, where u in
//     [0, 1) is derived from the key's hash, which interpolates the curve
//     below the sampling resolution 1/R. At R = 1 the distance is exact.
//   - Rate changes. A reference sampled at rate R weighs 1/R. SHARDS
//     instead rescales the histogram by R'/R when the rate falls to R'; the
//     relative weights, and so the curve, are the same, but no histogram
//     pass is needed.
//   - Histogram. Weights are kept by distance in log-linear buckets (exact
//     below 128, then 64 buckets per power of two: under 1.6% relative
//     error in the distance, up to 2^40), and interpolated linearly within
//     a bucket. First references go to a separate cold-miss count: they
//     miss at every size.
//   - Adjustment (SHARDS_adj). The references observed minus the total
//     weight of the sampled ones, which is mostly the traffic of hot keys
//     that happen not to be sampled (or, when negative, of one that is),
//     is credited as hits. SHARDS adds it to the first histogram bucket;
//     as distances are only resolved to 1/R, it is spread evenly over
//     sizes [1, 1/R] here.
//
// # Memory and error
//
// The memory is fixed by MaxSamples whatever the key space: about 70 bytes
// per sample (hash table, timestamps, Fenwick tree, eviction heap) plus an
// 18 KB histogram, about 600 KB for the default 8K samples; nothing is
// allocated after New. Keys are identified by their 64-bit hash; two
// sampled keys collide with probability about S^2/2^65.
//
// SHARDS reports a mean absolute error around 0.01 or less with 8K
// samples, over cache sizes spread across the whole curve. The package
// tests compare the estimate with Mattson's exact algorithm on Zipf,
// uniform and scan workloads over up to a million keys: with 8K samples
// the error is below 0.01 at sizes of 1000 and more. Sizes near or below
// the sampling resolution 1/R (about distinct keys / MaxSamples) are not
// resolved: their miss ratio depends on the few hottest keys, which the
// sample includes or not by chance, and errors of 0.1 occur there. To
// resolve a smallest size c, use MaxSamples of at least ten times the
// number of distinct keys divided by c. While the number of distinct keys
// stays within MaxSamples, R stays at its initial value (1 by default) and
// the curve is exact up to the histogram's bucket interpolation.
//
// # Epochs
//
// The curve covers the references since New or the last [Estimator.Reset],
// which restores the initial rate and empties the sample set: a control
// loop takes the curve and resets at the end of each period. A reset was
// chosen over decaying the histogram because
//
//   - the fixed-size sample set holds every sampled key ever seen, so
//     without a full restart the rate keeps falling as the key population
//     churns, and the resolution 1/R with it;
//   - the curve after a reset means exactly what an exact LRU simulation
//     of the same window computes, which is what the tests check, and
//     shows a shifted hot set from the next period on, while a decayed
//     histogram keeps the old hot set's distances for several periods.
//
// The price is that the first reference of each key in a period is a cold
// miss, as it would be for the exact simulation of the window: periods
// should be long compared with the number of distinct hot keys. A
// controller that needs continuity across periods can smooth successive
// curves or run two estimators with staggered resets.
//
// # Concurrency and cost
//
// An [Estimator] is safe for concurrent use. Observe hashes the key,
// increments a counter striped over cache lines by hash, and compares the
// hash with the threshold, an atomic load: an unsampled key costs only
// this and takes no lock. A sampled key also takes the estimator's mutex
// for the stack-distance and histogram update. On a 2-vCPU Xeon the two
// paths take about 15 ns and 110–160 ns (BenchmarkObserve). At rate R, a
// fraction R of the keys is sampled. Neither path allocates once a key is
// in the sample set. Curve, Points and Stats take the mutex for a few
// microseconds.
package mrc
