package hotkey

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/distcache/distcache/placement/hashing"
)

// Fixed shape of the sketch and the Bloom filter (DistCache §5).
const (
	// SketchRows is the number of Count-Min rows (register arrays).
	SketchRows = 4
	// BloomArrays is the number of Bloom filter bit arrays, one hash
	// function each.
	BloomArrays = 3
)

// Defaults applied by [Config] to zero fields.
const (
	DefaultSketchWidth = 65536
	DefaultBloomBits   = 262144
	DefaultMaxReports  = 1024
	// MinThreshold and MaxThreshold bound the adaptive threshold
	// (Config.Threshold 0; see adaptive.go).
	MinThreshold = 2
	MaxThreshold = 1 << 24
	// MaxSize bounds SketchWidth, BloomBits and MaxReports.
	MaxSize = 1 << 26
)

// ErrInvalidConfig is wrapped by the error of [NewDetector] when a size in
// the configuration is out of range.
var ErrInvalidConfig = errors.New("invalid configuration")

// Config configures a [Detector]. Zero fields take the defaults above.
type Config struct {
	// SketchWidth is the number of counters per Count-Min row (4 rows).
	SketchWidth int
	// BloomBits is the number of bits per Bloom array (3 arrays).
	BloomBits int
	// Threshold is the sketch estimate at which an uncached key is reported,
	// once per interval. A threshold of 1 reports every uncached key on its
	// first miss. 0 makes it adaptive: every interval sets the next one
	// from the traffic it saw (adaptive.go).
	Threshold uint32
	// MaxReports bounds the candidates kept per interval; reports beyond it
	// are counted in Stats.DroppedReports.
	MaxReports int
	// Seed seeds the hash; the detector derives its own seed from it.
	Seed uint64
}

// withDefaults returns c with zero fields replaced by the defaults.
func (c Config) withDefaults() Config {
	if c.SketchWidth == 0 {
		c.SketchWidth = DefaultSketchWidth
	}
	if c.BloomBits == 0 {
		c.BloomBits = DefaultBloomBits
	}
	if c.MaxReports == 0 {
		c.MaxReports = DefaultMaxReports
	}
	return c
}

// validate checks the sizes of a configuration with defaults applied.
func (c Config) validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{
		{"sketch width", c.SketchWidth},
		{"bloom bits", c.BloomBits},
		{"max reports", c.MaxReports},
	} {
		if f.v <= 0 || f.v > MaxSize {
			return fmt.Errorf("%w: %s %d out of range [1, %d]", ErrInvalidConfig, f.name, f.v, MaxSize)
		}
	}
	return nil
}

// Candidate is an uncached key reported as hot, with its Count-Min estimate.
type Candidate struct {
	Key   string
	Count uint32
}

// Stats are the detector's counters. All of them only increase.
type Stats struct {
	Misses         uint64 // RecordMiss calls
	Hits           uint64 // RecordHit calls (tracked or not)
	Reports        uint64 // candidates appended to a report list
	DroppedReports uint64 // candidates not kept because MaxReports was reached
	Intervals      uint64 // resets (each Plan or Reset call)
	// Threshold is the current interval's threshold (not a counter).
	Threshold uint32
}

const (
	// statStripes is the number of cache-line-padded stripes of the hit and
	// miss counters; a key's stripe is chosen by its hash.
	statStripes = 16
	// trackShards is the number of copy-on-write shards of the tracked set.
	trackShards = 256
	// cacheLine is the padding unit; 128 also defeats adjacent-line prefetch.
	cacheLine = 128
)

// statStripe is one stripe of the record-path counters.
type statStripe struct {
	misses atomic.Uint64
	hits   atomic.Uint64
	_      [cacheLine - 16]byte
}

// keyCounters maps a tracked key to its hit counter for the interval. A
// published map is never modified: writers replace it.
type keyCounters map[string]*atomic.Uint64

// Detector detects hot uncached keys and counts hits on cached keys. It is
// safe for concurrent use; see the package documentation.
//
// Lock order: planMu before trackMu or mu; trackMu and mu are never held
// together.
type Detector struct {
	hash       hashing.Func
	width      uint64 // counters per sketch row
	bloomBits  uint64 // bits per Bloom array
	bloomWords uint64 // 64-bit words per Bloom array
	maxReports int
	// threshold is the current interval's threshold: fixed, or set by
	// every reset when adaptive (read atomically on the record path).
	threshold atomic.Uint32
	adaptive  bool
	// last holds the counters at the last reset, for the adaptive
	// threshold's view of one interval; guarded by planMu.
	last Stats

	// sketch holds the 4 Count-Min rows, row r at [r·width, (r+1)·width).
	// Lock-free: counters are only accessed atomically.
	sketch []atomic.Uint32

	// bloom holds the 3 Bloom arrays, array a at [a·bloomWords,
	// (a+1)·bloomWords). Bits are read atomically without a lock but are set
	// (and cleared by Reset) only while holding mu, which makes the
	// test-and-set of a report atomic.
	bloom []atomic.Uint64

	// stripes hold the Misses and Hits counters (atomics, no lock).
	stripes [statStripes]statStripe
	// missesAtReset is the misses counted when the sketch was last
	// cleared (guarded by planMu).
	missesAtReset uint64

	// Atomics read by Stats without a lock; reports and dropped are only
	// incremented while holding mu, intervals while holding planMu.
	reports   atomic.Uint64
	dropped   atomic.Uint64
	intervals atomic.Uint64
	// hotCells is HotCellRatio's value (float64 bits), set by Reset.
	hotCells atomic.Uint64

	// mu guards cands and the setting/clearing of Bloom bits.
	mu    sync.Mutex
	cands []Candidate

	// trackMu serializes writers of tracked (Track, Untrack) and gives
	// Plan and Reset a consistent view of it. Readers (RecordHit) load the
	// shard pointers atomically without it.
	trackMu sync.Mutex
	tracked [trackShards]atomic.Pointer[keyCounters]

	// planMu serializes Plan and Reset, so intervals do not interleave.
	planMu sync.Mutex
}

// NewDetector returns a detector for cfg with defaults applied.
func NewDetector(cfg Config) (*Detector, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("cannot create hot-key detector: %w", err)
	}
	words := (uint64(cfg.BloomBits) + 63) / 64
	d := &Detector{
		hash:       hashing.New(hashing.Derive(cfg.Seed, "hotkey")),
		width:      uint64(cfg.SketchWidth),
		bloomBits:  uint64(cfg.BloomBits),
		bloomWords: words,
		maxReports: cfg.MaxReports,
		adaptive:   cfg.Threshold == 0,
		sketch:     make([]atomic.Uint32, SketchRows*cfg.SketchWidth),
		bloom:      make([]atomic.Uint64, BloomArrays*words),
		cands:      make([]Candidate, 0, min(cfg.MaxReports, DefaultMaxReports)),
	}
	d.threshold.Store(cfg.Threshold)
	if d.adaptive {
		d.threshold.Store(MinThreshold)
	}
	return d, nil
}

// mix64 is the MurmurHash3 64-bit finalizer, a bijection.
func mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// step returns the double-hashing increment h2 for the hash h1.
func step(h1 uint64) uint64 { return mix64(h1) | 1 }

// reduce maps x uniformly to [0, n) (multiply-high range reduction).
func reduce(x, n uint64) uint64 {
	hi, _ := bits.Mul64(x, n)
	return hi
}

// sketchIndex returns the index in d.sketch of row r's counter for g = h1 + r·h2.
func (d *Detector) sketchIndex(r int, g uint64) uint64 {
	return uint64(r)*d.width + reduce(g, d.width)
}

// bloomBit returns the word index in d.bloom and the bit mask of array a's
// bit for g = h1 + (SketchRows+a)·h2.
func (d *Detector) bloomBit(a int, g uint64) (uint64, uint64) {
	p := reduce(g, d.bloomBits)
	return uint64(a)*d.bloomWords + p>>6, 1 << (p & 63)
}

// stripe returns the statistics stripe of the hash h.
func (d *Detector) stripe(h uint64) *statStripe { return &d.stripes[(h>>8)%statStripes] }

// shard returns the tracked-set shard of the hash h.
func (d *Detector) shard(h uint64) *atomic.Pointer[keyCounters] {
	return &d.tracked[h%trackShards]
}

// incSat increments c unless it is saturated and returns the new value.
func incSat(c *atomic.Uint32) uint32 {
	for {
		v := c.Load()
		if v == math.MaxUint32 {
			return v
		}
		if c.CompareAndSwap(v, v+1) {
			return v + 1
		}
	}
}

// RecordMiss records a query of an uncached key: it increments the key's
// sketch counters and, the first time in the interval that the estimate
// reaches the threshold, reports the key as a candidate. The reported key is
// copied, so key may alias a reused buffer. It does not allocate except when
// it reports.
func (d *Detector) RecordMiss(key string) { d.Record(key) }

// Record is RecordMiss that also reports whether the key's estimate has
// reached the threshold in this interval: a reader that keeps its own
// detector (the client's warm reads) learns with one hash whether the key
// is hot.
func (d *Detector) Record(key string) bool {
	h1 := d.hash.String(key)
	d.stripe(h1).misses.Add(1)
	h2 := step(h1)
	est := uint32(math.MaxUint32)
	g := h1
	for r := range SketchRows {
		est = min(est, incSat(&d.sketch[d.sketchIndex(r, g)]))
		g += h2
	}
	if est < d.threshold.Load() {
		return false
	}
	if !d.inBloom(g, h2) {
		d.report(key, est, g, h2)
	}
	return true
}

// inBloom reports whether all Bloom bits of the key are set; g is the hash
// of the first Bloom array and h2 the step.
func (d *Detector) inBloom(g, h2 uint64) bool {
	for a := range BloomArrays {
		w, m := d.bloomBit(a, g)
		if d.bloom[w].Load()&m == 0 {
			return false
		}
		g += h2
	}
	return true
}

// report is the slow path of RecordMiss: under mu it sets the key's Bloom
// bits and, if one was clear, appends the candidate (or counts it dropped).
func (d *Detector) report(key string, est uint32, g, h2 uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	present := true
	for a := range BloomArrays {
		w, m := d.bloomBit(a, g)
		if d.bloom[w].Or(m)&m == 0 {
			present = false
		}
		g += h2
	}
	if present {
		return // reported concurrently, or a Bloom false positive
	}
	if len(d.cands) >= d.maxReports {
		d.dropped.Add(1)
		return
	}
	d.cands = append(d.cands, Candidate{Key: strings.Clone(key), Count: est})
	d.reports.Add(1)
}

// Estimate returns the Count-Min estimate of key's misses in the current
// interval. It never underestimates the misses recorded since the last reset.
func (d *Detector) Estimate(key string) uint32 {
	h1 := d.hash.String(key)
	h2 := step(h1)
	est := uint32(math.MaxUint32)
	g := h1
	for r := range SketchRows {
		est = min(est, d.sketch[d.sketchIndex(r, g)].Load())
		g += h2
	}
	return est
}

// RecordHit records a query of a cached key; the key's counter is
// incremented if the key is tracked. It does not allocate.
func (d *Detector) RecordHit(key string) {
	h := d.hash.String(key)
	d.stripe(h).hits.Add(1)
	if m := d.shard(h).Load(); m != nil {
		if c := (*m)[key]; c != nil {
			c.Add(1)
		}
	}
}

// Track starts counting hits on key, which became cached. Tracking a tracked
// key keeps its counter. Track copies one shard of the tracked set, so it
// belongs on the agent's control path.
func (d *Detector) Track(key string) {
	s := d.shard(d.hash.String(key))
	d.trackMu.Lock()
	defer d.trackMu.Unlock()
	old := s.Load()
	var m keyCounters
	if old != nil {
		if _, ok := (*old)[key]; ok {
			return
		}
		m = make(keyCounters, len(*old)+1)
		maps.Copy(m, *old)
	} else {
		m = make(keyCounters, 1)
	}
	m[strings.Clone(key)] = new(atomic.Uint64)
	s.Store(&m)
}

// Untrack stops counting hits on key, which was evicted. Untracking an
// untracked key does nothing.
func (d *Detector) Untrack(key string) {
	s := d.shard(d.hash.String(key))
	d.trackMu.Lock()
	defer d.trackMu.Unlock()
	old := s.Load()
	if old == nil {
		return
	}
	if _, ok := (*old)[key]; !ok {
		return
	}
	m := maps.Clone(*old)
	delete(m, key)
	s.Store(&m)
}

// trackedCounts returns the tracked keys with this interval's hit counts.
func (d *Detector) trackedCounts() []trackedKey {
	d.trackMu.Lock()
	defer d.trackMu.Unlock()
	var out []trackedKey
	for i := range d.tracked {
		if m := d.tracked[i].Load(); m != nil {
			for k, c := range *m {
				out = append(out, trackedKey{key: k, count: c.Load()})
			}
		}
	}
	return out
}

// isTracked reports whether key is tracked.
func (d *Detector) isTracked(key string) bool {
	m := d.shard(d.hash.String(key)).Load()
	if m == nil {
		return false
	}
	_, ok := (*m)[key]
	return ok
}

// candidates returns a copy of this interval's report list.
func (d *Detector) candidates() []Candidate {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Candidate(nil), d.cands...)
}

// Reset starts a new interval: it clears the sketch, the Bloom filter, the
// report list and the hit counters of tracked keys (the tracked set is
// kept). Records that run concurrently with Reset may be counted in either
// interval.
func (d *Detector) Reset() {
	d.planMu.Lock()
	defer d.planMu.Unlock()
	d.resetLocked()
}

// resetLocked is Reset with planMu held. Clearing the sketch also counts
// its counters that had reached the threshold (HotCellRatio).
func (d *Detector) resetLocked() {
	hot := 0
	threshold := d.threshold.Load()
	// An interval without a miss left the sketch and the Bloom filter
	// clear: nothing to scan. Otherwise most counters are still zero on a
	// node that is not busy, and a load is a plain read where an atomic
	// swap is a locked write: swapping every cell cost an idle node about
	// 2 ms per interval. A counter incremented after its load waits for the
	// next interval, as if it had come after the reset; so does one
	// incremented after the misses were summed.
	misses := d.misses()
	touched := misses != d.missesAtReset
	d.missesAtReset = misses
	if touched {
		for i := range d.sketch {
			c := &d.sketch[i]
			if c.Load() != 0 && c.Swap(0) >= threshold {
				hot++
			}
		}
	}
	d.hotCells.Store(math.Float64bits(float64(hot) / float64(len(d.sketch))))
	d.mu.Lock()
	if touched {
		for i := range d.bloom {
			if d.bloom[i].Load() != 0 {
				d.bloom[i].Store(0)
			}
		}
	}
	clear(d.cands) // release the keys
	d.cands = d.cands[:0]
	d.mu.Unlock()
	d.trackMu.Lock()
	for i := range d.tracked {
		if m := d.tracked[i].Load(); m != nil {
			for _, c := range *m {
				c.Store(0)
			}
		}
	}
	d.trackMu.Unlock()
	d.intervals.Add(1)
	if d.adaptive {
		now := d.Stats()
		d.threshold.Store(nextThreshold(threshold, now.sub(d.last), d.width, d.maxReports))
		d.last = now
	}
}

// HotCellRatio is the fraction of the Count-Min sketch's counters that had
// reached the threshold when the last interval ended (0 before the
// first). A key is reported only if its counter in every row did, so the
// ratio bounds how often a key that is not hot is reported: about its
// fourth power (one counter per row). A ratio that grows means the sketch
// is too narrow for the traffic (Config.SketchWidth).
func (d *Detector) HotCellRatio() float64 { return math.Float64frombits(d.hotCells.Load()) }

// misses sums the misses counted so far.
func (d *Detector) misses() uint64 {
	var n uint64
	for i := range d.stripes {
		n += d.stripes[i].misses.Load()
	}
	return n
}

// Stats returns a snapshot of the counters. Counters are read one at a time,
// so a snapshot taken during records may mix slightly different instants.
func (d *Detector) Stats() Stats {
	var s Stats
	for i := range d.stripes {
		s.Misses += d.stripes[i].misses.Load()
		s.Hits += d.stripes[i].hits.Load()
	}
	s.Reports = d.reports.Load()
	s.DroppedReports = d.dropped.Load()
	s.Intervals = d.intervals.Load()
	s.Threshold = d.threshold.Load()
	return s
}
