package lease

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Holder is a cache node's leases, one per shim, by the shim's index
// (the shard's index in the partition map). Times are the node's
// monotonic clock, as a Duration since a start of the caller's choosing.
//
// Valid is lock-free: one atomic load and a comparison, for the hit path.
// Grants take a lock, so that an epoch change and its flush are one step
// for every other grant of the same shim.
type Holder struct {
	length time.Duration

	mu     sync.Mutex // guards grants: epoch changes and extensions
	leases []held     // by shim index; the slice itself never grows
}

// held is one shim's lease at a node.
type held struct {
	until atomic.Int64 // end of the lease (node clock, ns); 0: none
	// epoch is the shim's epoch for the node: 0 before its first grant,
	// flushing while a new epoch's flush runs.
	epoch atomic.Uint64
}

// flushing is the epoch of a lease whose flush runs: no value reaches the
// cache meanwhile.
const flushing = ^uint64(0)

// NewHolder returns the leases of a node that caches keys of shims
// shims (0 … shims-1), each grant lasting at most length.
func NewHolder(shims int, length time.Duration) (*Holder, error) {
	if shims <= 0 || length <= 0 {
		return nil, fmt.Errorf("cannot keep leases: %d shims, length %v", shims, length)
	}
	return &Holder{length: length, leases: make([]held, shims)}, nil
}

// Valid says whether the node holds shim's lease at now: whether it may
// answer a read of one of shim's keys from its cache.
// A shim outside the holder's range holds no lease.
func (h *Holder) Valid(shim int, now time.Duration) bool {
	return uint(shim) < uint(len(h.leases)) && int64(now) < h.leases[shim].until.Load()
}

// Current says whether a value the shim sent in epoch (an UPDATE, a FILL)
// may reach the node's cache: in the epoch the node holds, or any before
// the shim's first grant, whose flush drops what such values filled.
func (h *Holder) Current(shim int, epoch uint64) bool {
	if uint(shim) >= uint(len(h.leases)) {
		return false
	}
	switch held := h.leases[shim].epoch.Load(); held {
	case 0:
		return true
	case flushing:
		return false
	default:
		return held == epoch
	}
}

// Grant applies the shim's grant of epoch, for length, to a renewal the
// node sent at sent. In the node's epoch it extends the lease to sent
// plus the shorter of length and the holder's. A grant of a newer epoch, or of another run of the shim (the
// high 32 bits), calls flush first, which must drop every entry of the
// shim's keys (and their fills in flight), and then starts the lease in
// that epoch. A grant of an older epoch of the same run changes nothing.
// It reports whether it flushed.
func (h *Holder) Grant(shim int, epoch uint64, sent, length time.Duration, flush func()) bool {
	if epoch == 0 || epoch == flushing || length <= 0 || uint(shim) >= uint(len(h.leases)) {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	l := &h.leases[shim]
	end := int64(sent + min(length, h.length))
	switch held := l.epoch.Load(); {
	case held == epoch:
		if end > l.until.Load() {
			l.until.Store(end)
		}
		return false
	case held != 0 && held>>32 == epoch>>32 && epoch < held:
		return false // a late grant of an epoch the node has left
	}
	// During the flush no entry is served and no value of the old epoch
	// reaches the cache.
	l.until.Store(0)
	l.epoch.Store(flushing)
	flush()
	l.epoch.Store(epoch)
	l.until.Store(end)
	return true
}
