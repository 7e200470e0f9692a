package routing

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
)

// NodeID identifies a cache node across layers (assigned by the partition
// map; dense small integers). A LoadTable stores per-node state in a slice
// indexed by NodeID, so IDs must be below MaxNodes.
type NodeID uint32

// MaxNodes bounds the NodeIDs a LoadTable stores. Observe ignores (and counts)
// telemetry for a node >= MaxNodes, MarkFailed is a no-op for such a node, and
// Load/Failed report it as unknown (0 / false). The bound keeps a corrupt or
// sparse ID from making the table allocate gigabytes; the worst case, an ID
// just below MaxNodes, costs 32 MiB.
const MaxNodes = 1 << 20

// ErrInvalidConfig is wrapped by the constructors' errors when a
// configuration value is out of range.
var ErrInvalidConfig = errors.New("invalid config")

// AgingConfig controls how a LoadTable ages loads that have not been
// refreshed (DistCache §4.2). The zero value disables aging.
type AgingConfig struct {
	// StaleAfter (ns): an entry not updated for longer than this starts to
	// age. 0 disables aging (HalfLife is then ignored). Must be >= 0.
	StaleAfter int64
	// HalfLife (ns): after StaleAfter, the load halves every HalfLife
	// (continuous exponential decay toward zero). Must be > 0 when aging is
	// enabled.
	HalfLife int64
}

func (c AgingConfig) validate() error {
	if c.StaleAfter < 0 {
		return fmt.Errorf("%w: aging StaleAfter must be >= 0, got %d", ErrInvalidConfig, c.StaleAfter)
	}
	if c.HalfLife < 0 {
		return fmt.Errorf("%w: aging HalfLife must be >= 0, got %d", ErrInvalidConfig, c.HalfLife)
	}
	if c.StaleAfter > 0 && c.HalfLife == 0 {
		return fmt.Errorf("%w: aging HalfLife must be > 0 when StaleAfter (%d) enables aging", ErrInvalidConfig, c.StaleAfter)
	}
	return nil
}

const (
	chunkBits = 6
	chunkSize = 1 << chunkBits // entries per chunk; chunks never move once allocated
	chunkMask = chunkSize - 1
	maxChunks = MaxNodes / chunkSize
	// spinLimit is how many times a seqlock reader or writer retries before
	// yielding the processor (the other side may have been preempted inside
	// its three-store critical section).
	spinLimit = 64
)

// entry is the per-node state: 40 bytes.
//
// load and stamp form one logical value published with a sequence lock: a
// writer moves seq from even to odd with a CAS (which also excludes other
// writers), stores load and stamp, and stores seq+2. A reader retries while seq
// is odd or changed across its two loads. All fields are atomics, so under the
// Go memory model (sequentially consistent atomics) a reader that sees the
// same even seq before and after has read a pair from one single write.
// failed, inflight and caughtUp are independent of the seqlock
// (outstanding.go).
type entry struct {
	seq      atomic.Uint64
	load     atomic.Uint64 // math.Float64bits of the last observed load
	stamp    atomic.Int64  // "now" of the last Observe
	failed   atomic.Uint32 // 1 while marked failed
	inflight atomic.Int32  // requests sent and neither answered nor abandoned
	caughtUp atomic.Int64  // see LoadTable.Sent
}

// read returns a consistent (load, stamp) pair. Router.Choose carries a
// hand-inlined copy of the fast path.
func (e *entry) read() (load float64, stamp int64) {
	s := e.seq.Load()
	l := e.load.Load()
	st := e.stamp.Load()
	if s&1 == 0 && e.seq.Load() == s {
		return math.Float64frombits(l), st
	}
	return e.readSlow()
}

func (e *entry) readSlow() (load float64, stamp int64) {
	for spins := 0; ; spins++ {
		s := e.seq.Load()
		if s&1 == 0 {
			l := e.load.Load()
			st := e.stamp.Load()
			if e.seq.Load() == s {
				return math.Float64frombits(l), st
			}
		}
		if spins >= spinLimit {
			runtime.Gosched()
		}
	}
}

func (e *entry) write(load float64, stamp int64) {
	for spins := 0; ; spins++ {
		s := e.seq.Load()
		if s&1 == 0 && e.seq.CompareAndSwap(s, s+1) {
			e.load.Store(math.Float64bits(load))
			e.stamp.Store(stamp)
			e.seq.Store(s + 2)
			return
		}
		if spins >= spinLimit {
			runtime.Gosched()
		}
	}
}

type chunk [chunkSize]entry

// LoadTable holds the loads a sender has observed through reply telemetry,
// plus the set of nodes marked failed. It is safe for concurrent use.
//
// Layout: a directory of fixed-size chunks of entries, indexed by NodeID. The
// directory is an immutable slice published through an atomic pointer, so
// lookups (Load, Failed, Router.Choose) and updates of existing entries
// (Observe, MarkFailed, Reset) take no mutex; each entry's (load, stamp) pair
// is guarded by its own sequence lock (see entry). Chunks never move, so an
// update made through an old directory is visible through every later one.
// Only growing the directory (first sight of a NodeID beyond the current
// size) takes mu, and allocates.
type LoadTable struct {
	aging      AgingConfig
	decayPerNs float64 // ln 2 / HalfLife
	stallAfter int64   // ns; 0: stalls are not tracked (WithStallAfter)
	// remoteFactor multiplies a Remote candidate's load (WithRemoteMargin);
	// 0: candidates are not told apart by zone.
	remoteFactor float64
	dir          atomic.Pointer[[]*chunk]
	// mu guards growth of dir only: it serialises grow so that two writers
	// never publish diverging directories (a directory built from a stale
	// copy would drop chunks). Readers and updates of existing entries never
	// take it.
	mu      sync.Mutex
	ignored atomic.Uint64 // Stats.IgnoredObservations
}

// TableOption configures a LoadTable beyond its aging.
type TableOption func(*LoadTable) error

// NewLoadTable returns an empty table that ages loads according to aging. The
// first 64 NodeIDs are preallocated.
func NewLoadTable(aging AgingConfig, opts ...TableOption) (*LoadTable, error) {
	if err := aging.validate(); err != nil {
		return nil, fmt.Errorf("cannot create load table: %w", err)
	}
	t := &LoadTable{aging: aging}
	for _, o := range opts {
		if err := o(t); err != nil {
			return nil, fmt.Errorf("cannot create load table: %w", err)
		}
	}
	if aging.StaleAfter > 0 {
		t.decayPerNs = math.Ln2 / float64(aging.HalfLife)
	}
	d := []*chunk{new(chunk)}
	t.dir.Store(&d)
	return t, nil
}

// chunks returns the current directory snapshot.
func (t *LoadTable) chunks() []*chunk { return *t.dir.Load() }

// lookup returns node's entry in directory d, or nil if d does not cover it.
func lookup(d []*chunk, node NodeID) *entry {
	ci := uint(node) >> chunkBits
	if ci >= uint(len(d)) {
		return nil
	}
	return &d[ci][node&chunkMask]
}

// entryFor returns node's entry, growing the table if needed; nil if
// node >= MaxNodes.
func (t *LoadTable) entryFor(node NodeID) *entry {
	if e := lookup(t.chunks(), node); e != nil {
		return e
	}
	if node >= MaxNodes {
		return nil
	}
	return lookup(t.grow(uint(node)>>chunkBits), node)
}

// grow makes the directory cover chunk index ci (< maxChunks) and returns it.
func (t *LoadTable) grow(ci uint) []*chunk {
	t.mu.Lock()
	defer t.mu.Unlock()
	d := t.chunks()
	if ci < uint(len(d)) {
		return d // another writer grew it meanwhile
	}
	n := min(max(ci+1, 2*uint(len(d))), maxChunks)
	nd := make([]*chunk, n)
	copy(nd, d)
	for i := len(d); i < len(nd); i++ {
		nd[i] = new(chunk)
	}
	t.dir.Store(&nd)
	return nd
}

// Observe records telemetry from a reply: node reported load at time now.
// The latest call wins (there is no reordering by now). A NaN, negative or
// infinite load, or a node >= MaxNodes, is ignored and counted in
// Stats().IgnoredObservations. Observe does not allocate unless node is beyond
// the table's current size.
func (t *LoadTable) Observe(node NodeID, load float64, now int64) {
	if !(load >= 0) || math.IsInf(load, 1) {
		t.ignored.Add(1)
		return
	}
	e := t.entryFor(node)
	if e == nil {
		t.ignored.Add(1)
		return
	}
	e.write(load, now)
}

// Load returns node's last observed load, aged to time now; 0 for a node never
// observed (or forgotten by Reset).
func (t *LoadTable) Load(node NodeID, now int64) float64 {
	e := lookup(t.chunks(), node)
	if e == nil {
		return 0
	}
	l, st := e.read()
	return t.aged(l, st, now)
}

// aged applies the aging rule to a load observed at stamp.
// Router.Choose carries a hand-inlined copy.
func (t *LoadTable) aged(load float64, stamp, now int64) float64 {
	// decayPerNs is 0 when aging is disabled.
	if age := now - stamp - t.aging.StaleAfter; age > 0 && t.decayPerNs != 0 && load != 0 {
		// load·2^(-age/HalfLife), via the (assembly) math.Exp, which is
		// faster than math.Exp2 on amd64; the error is ~1e-16 relative.
		return load * math.Exp(-float64(age)*t.decayPerNs)
	}
	return load
}

// MarkFailed marks node failed (or recovered). Router.Choose never picks a
// failed node while a non-failed candidate exists. A node's load is kept while
// it is failed. No-op for node >= MaxNodes.
func (t *LoadTable) MarkFailed(node NodeID, failed bool) {
	if !failed {
		if e := lookup(t.chunks(), node); e != nil {
			e.failed.Store(0)
		}
		return
	}
	if e := t.entryFor(node); e != nil {
		e.failed.Store(1)
	}
}

// Failed reports whether node is marked failed.
func (t *LoadTable) Failed(node NodeID) bool {
	e := lookup(t.chunks(), node)
	return e != nil && e.failed.Load() != 0
}

// Reset forgets all observed loads, e.g. after a client ToR reboot (DistCache
// §4.4): every node reads as load 0 until observed again. Failure marks are
// kept, since they come from the control plane rather than from telemetry;
// call MarkFailed to clear them. An Observe concurrent with Reset may or may
// not survive it.
func (t *LoadTable) Reset() {
	for _, c := range t.chunks() {
		for i := range c {
			c[i].write(0, 0)
		}
	}
}

// Stats returns the table's counters; only IgnoredObservations is set (the
// other fields are counted by Router).
func (t *LoadTable) Stats() Stats {
	return Stats{IgnoredObservations: t.ignored.Load()}
}
