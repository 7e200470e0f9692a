package mrc

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
)

// DefaultMaxSamples is the sample-set size used when Config.MaxSamples is
// zero: the 8K samples with which SHARDS reports a mean absolute error
// around 0.01 or better.
const DefaultMaxSamples = 8192

// largestMaxSamples bounds Config.MaxSamples so that timestamps fit in 32 bits.
const largestMaxSamples = 1 << 28

// ErrInvalidConfig is wrapped by the errors New returns for a bad Config.
var ErrInvalidConfig = errors.New("invalid config")

// Config configures an Estimator. The zero value is valid.
type Config struct {
	// MaxSamples is the largest number of distinct keys kept in the sample
	// set (s_max in SHARDS); it bounds the estimator's memory. Zero means
	// DefaultMaxSamples.
	MaxSamples int

	// InitialRate is the sampling rate after New and Reset, in (0, 1]; the
	// rate only falls from there as the sample set fills. Zero means 1:
	// every key is tracked until MaxSamples distinct keys have been seen,
	// so the curve of a small key space is exact.
	InitialRate float64
}

// Point is one point of a miss-ratio curve.
type Point struct {
	Size      int     // cache size in entries
	MissRatio float64 // estimated LRU miss ratio at Size
}

// Stats are the estimator's counters since New or the last Reset.
type Stats struct {
	Observed        uint64  // references passed to an Observe method
	Sampled         uint64  // references whose key was in the sample
	ColdMisses      uint64  // sampled first references of a key
	SampleEvictions uint64  // keys evicted from the full sample set
	SampledKeys     int     // keys currently in the sample set
	Threshold       uint64  // a key is sampled iff its hash < Threshold
	SamplingRate    float64 // Threshold / 2^64
}

// Estimator estimates the LRU miss-ratio curve of a stream of key
// references with fixed-size SHARDS. It is safe for concurrent use. Create
// one with New; the zero value is not usable.
type Estimator struct {
	// threshold is the sampling threshold: a key whose hash is below it is
	// sampled. It is written with mu held and read without it, so that
	// Observe rejects unsampled keys without locking. It only falls, except
	// in Reset.
	threshold atomic.Uint64
	_         [cacheLineSize - 8]byte // keep the counter stripes off threshold's line

	observed stripedCounter // references observed, sampled or not

	mu sync.Mutex // guards everything below
	// maxSamples and initialThreshold are fixed by New.
	maxSamples       int
	initialThreshold uint64
	rate             float64    // threshold / 2^64
	stack            reuseStack // sampled keys in LRU order, with timestamps
	evictionOrder    hashHeap   // sampled key hashes, largest on top
	hist             histogram  // weighted references by stack distance
	sampled          uint64
	coldMisses       uint64
	evictions        uint64
}

// New returns an estimator configured by cfg.
func New(cfg Config) (*Estimator, error) {
	if cfg.MaxSamples < 0 || cfg.MaxSamples > largestMaxSamples {
		return nil, fmt.Errorf("cannot create estimator: MaxSamples %d is outside [0, %d]: %w",
			cfg.MaxSamples, largestMaxSamples, ErrInvalidConfig)
	}
	if math.IsNaN(cfg.InitialRate) || cfg.InitialRate < 0 || cfg.InitialRate > 1 {
		return nil, fmt.Errorf("cannot create estimator: InitialRate %v is outside (0, 1]: %w",
			cfg.InitialRate, ErrInvalidConfig)
	}
	maxSamples := cfg.MaxSamples
	if maxSamples == 0 {
		maxSamples = DefaultMaxSamples
	}
	initialThreshold := uint64(math.MaxUint64)
	if scaled := cfg.InitialRate * (1 << 64); cfg.InitialRate > 0 && scaled < 1<<64 {
		initialThreshold = max(uint64(scaled), 1)
	}
	e := &Estimator{
		maxSamples:       maxSamples,
		initialThreshold: initialThreshold,
		stack:            newReuseStack(maxSamples),
		evictionOrder:    newHashHeap(maxSamples + 1),
	}
	e.Reset()
	return e, nil
}

// Observe records a reference to key.
func (e *Estimator) Observe(key []byte) { e.ObserveHash(xxhash.Sum64(key)) }

// ObserveString records a reference to key; it is equivalent to Observe
// with the key's bytes.
func (e *Estimator) ObserveString(key string) { e.ObserveHash(xxhash.Sum64String(key)) }

// ObserveHash records a reference to the key with the given 64-bit hash.
// The hash must be uniformly distributed (as XXH64 is), since sampling
// takes the keys whose hash is below a threshold; distinct keys with equal
// hashes are counted as one key.
func (e *Estimator) ObserveHash(hash uint64) {
	e.observed.inc(hash)
	if hash >= e.threshold.Load() {
		return
	}
	e.mu.Lock()
	e.sampleLocked(hash)
	e.mu.Unlock()
}

// sampleLocked records a reference to a key that passed the unlocked
// sampling test.
func (e *Estimator) sampleLocked(hash uint64) {
	if hash >= e.threshold.Load() {
		return // the threshold fell after the unlocked test
	}
	e.sampled++
	weight := 1 / e.rate
	distance, found := e.stack.access(hash)
	if found {
		e.hist.addReuse(scaledDistance(distance, e.rate, dither(hash, e.sampled)), weight)
		return
	}
	e.coldMisses++
	e.hist.addCold(weight)
	e.evictionOrder.push(hash)
	if e.stack.len() > e.maxSamples {
		e.lowerThresholdLocked()
	}
}

// scaledDistance estimates the stack distance in the full stream of a
// reference whose stack distance among the sampled keys is sampledDistance
// (≥ 1, the key itself included). Each of the k = sampledDistance-1 other
// sampled keys stands for 1/rate keys of the full stream, so the distance
// lies in [1 + k/rate, 1 + (k+1)/rate); dither, in [0, 1), places the
// reference within that interval, so that the curve is interpolated
// linearly below the sampling resolution 1/rate instead of moving in steps
// of 1/rate. At rate 1 the result rounds down to the exact distance.
func scaledDistance(sampledDistance int, rate, dither float64) float64 {
	return 1 + (float64(sampledDistance-1)+dither)/rate
}

// dither returns a number in [0, 1) that looks random but depends only on
// its arguments (MurmurHash3's 64-bit finalizer), so runs are repeatable.
func dither(hash, sequence uint64) float64 {
	x := hash ^ sequence*0x9e3779b97f4a7c15
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return float64(x>>11) / (1 << 53)
}

// lowerThresholdLocked evicts the sampled key with the largest hash and
// lowers the threshold to that hash, so that the key and every key above
// it are no longer sampled (fixed-size SHARDS).
func (e *Estimator) lowerThresholdLocked() {
	top := e.evictionOrder.popMax()
	e.stack.remove(top)
	e.evictions++
	e.threshold.Store(top)
	e.rate = thresholdRate(top)
}

func thresholdRate(threshold uint64) float64 { return float64(threshold) / (1 << 64) }

// Reset discards everything observed and restores the initial sampling
// rate, starting a new measurement epoch.
func (e *Estimator) Reset() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.observed.reset()
	e.stack.reset()
	e.evictionOrder.reset()
	e.hist.reset()
	e.sampled, e.coldMisses, e.evictions = 0, 0, 0
	e.threshold.Store(e.initialThreshold)
	e.rate = thresholdRate(e.initialThreshold)
}

// Curve returns the estimated miss ratio of an LRU cache of each of the
// given sizes (in entries, in any order). A size of zero or less has miss
// ratio 1, and so has every size while nothing has been observed.
func (e *Estimator) Curve(sizes []int) []float64 {
	ev := e.evaluator(true)
	ratios := make([]float64, len(sizes))
	for i, size := range sizes {
		ratios[i] = ev.missRatio(size)
	}
	return ratios
}

// Points returns the curve at n evenly spaced sizes up to maxSize, the
// last being maxSize (fewer points if maxSize < n). If maxSize is zero or
// less, it is about the largest stack distance observed, past which the
// curve stays flat at the cold-miss ratio. Points returns nil if n is zero
// or less.
func (e *Estimator) Points(maxSize, n int) []Point {
	if n <= 0 {
		return nil
	}
	e.mu.Lock()
	if maxSize <= 0 {
		maxSize = int(min(e.hist.largestDistance(), math.MaxInt32))
	}
	ev := newCurveEvaluator(&e.hist, e.observed.load(), e.rate, true)
	e.mu.Unlock()
	maxSize = max(maxSize, 1)
	points := make([]Point, 0, n)
	for i := 1; i <= n; i++ {
		size := int(float64(maxSize) * float64(i) / float64(n))
		if size < 1 || (len(points) > 0 && size == points[len(points)-1].Size) {
			continue
		}
		points = append(points, Point{Size: size, MissRatio: ev.missRatio(size)})
	}
	return points
}

// evaluator returns a copy of the histogram ready for miss-ratio queries.
func (e *Estimator) evaluator(adjust bool) curveEvaluator {
	e.mu.Lock()
	defer e.mu.Unlock()
	return newCurveEvaluator(&e.hist, e.observed.load(), e.rate, adjust)
}

// Stats returns the estimator's counters.
func (e *Estimator) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	threshold := e.threshold.Load()
	return Stats{
		Observed:        e.observed.load(),
		Sampled:         e.sampled,
		ColdMisses:      e.coldMisses,
		SampleEvictions: e.evictions,
		SampledKeys:     e.stack.len(),
		Threshold:       threshold,
		SamplingRate:    thresholdRate(threshold),
	}
}
