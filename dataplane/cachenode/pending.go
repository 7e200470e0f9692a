package cachenode

import "time"

// Pending-write tracking bounds.
const (
	// pendingTTL bounds how long a write counts as in progress without its
	// phase 2. It must exceed the longest write a shim runs (phase 1 within
	// InvalidateTimeout, 2 s by default, plus the Redis write, 1 s): past
	// it, the write has either completed or failed.
	pendingTTL = 10 * time.Second
	// pendingCap bounds the table; beyond it (phase-2 messages lost at a
	// high rate) no miss is coalesced until expired entries are pruned.
	pendingCap = 1 << 16
)

// pendingWrites records, per key, a write whose phase 1 reached this node
// and whose phase 2 has not: between the two the shim may not have written
// Redis yet, so a backend read started then can return the value the write
// replaces even after the write is acknowledged. A flight started while a
// write of its key is pending therefore takes no other readers (DistCache
// §4.3 with CableCache's coalescing: never coalesce across a write). The
// caller holds Node.missMu.
type pendingWrites struct {
	m map[string]pendingWrite
}

type pendingWrite struct {
	version uint64
	at      time.Time
	// late says a reader parked on this write waited ParkTimeout for its
	// phase 2 in vain: the shim is waiting for a holder that does not
	// acknowledge (until the lease it granted ends) or for a slow Redis.
	// Later readers of the key do not park on it again; each starts its
	// own backend read, as without parking.
	late bool
}

func newPendingWrites() pendingWrites { return pendingWrites{m: make(map[string]pendingWrite)} }

// begin records phase 1 of the write of version v to key at now.
func (p *pendingWrites) begin(key string, v uint64, now time.Time) {
	if w, ok := p.m[key]; ok && w.version > v {
		return
	}
	if len(p.m) >= pendingCap {
		p.prune(now)
	}
	p.m[key] = pendingWrite{version: v, at: now}
}

// end records phase 2 of the write of version v to key: it ends the
// pending write of key unless a later write's phase 1 arrived since.
func (p *pendingWrites) end(key []byte, v uint64) {
	if w, ok := p.m[string(key)]; ok && w.version <= v {
		delete(p.m, string(key))
	}
}

// active reports whether a write of key may be in progress at now.
func (p *pendingWrites) active(key string, now time.Time) bool {
	if len(p.m) >= pendingCap {
		return true // saturated: be safe, coalesce nothing
	}
	w, ok := p.m[key]
	if ok && now.Sub(w.at) >= pendingTTL {
		delete(p.m, key)
		return false
	}
	return ok
}

// lookup returns key's pending write, if the table has one (active may
// also report a write when the table is saturated).
func (p *pendingWrites) lookup(key string) (pendingWrite, bool) {
	w, ok := p.m[key]
	return w, ok
}

// markLate records that readers parked on key's write of version v or
// earlier waited ParkTimeout for its phase 2: the pending write, unless a
// later one's phase 1 arrived since, is late.
func (p *pendingWrites) markLate(key string, v uint64) {
	if w, ok := p.m[key]; ok && w.version <= v {
		w.late = true
		p.m[key] = w
	}
}

// prune drops the entries older than pendingTTL.
func (p *pendingWrites) prune(now time.Time) {
	for k, w := range p.m {
		if now.Sub(w.at) >= pendingTTL {
			delete(p.m, k)
		}
	}
}
