package shim

import (
	"sync"
	"time"
)

// A key that a release (wire.RMWRelease) took out of the caches is held
// back from them for a while: a FETCH of it is answered StatusUncacheable,
// without adding it to the keys a cache may hold, and a read of it is not
// tracked. The client that released it is about to write it in Redis
// itself, in a transaction that Redis runs only while the key is not in
// that set (client/atomic.go); without the hold, a hot key that a node
// inserts again at once would make the transaction start over until it
// gave up. The hold only keeps copies away: it is never needed for safety.

// DefaultReleaseHold is Config.ReleaseHold's default.
const DefaultReleaseHold = time.Second

// heldBack lists the keys held back, until when.
type heldBack struct {
	mu    sync.Mutex // guards until
	until map[string]time.Time
}

// maxHeldBack bounds the keys listed: beyond it, the expired ones go, and
// a new one is not held back if none has expired.
const maxHeldBack = 1 << 16

// add holds key back until until.
func (h *heldBack) add(key string, until time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.until == nil {
		h.until = map[string]time.Time{}
	}
	if len(h.until) >= maxHeldBack {
		now := time.Now()
		for k, t := range h.until {
			if now.After(t) {
				delete(h.until, k)
			}
		}
		if len(h.until) >= maxHeldBack {
			return
		}
	}
	h.until[key] = until
}

// holds says whether key is held back at now.
func (h *heldBack) holds(key string, now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	t, ok := h.until[key]
	if ok && now.After(t) {
		delete(h.until, key)
		return false
	}
	return ok
}
