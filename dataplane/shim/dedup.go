package shim

import (
	"net/netip"
	"sync"
	"time"

	"github.com/distcache/distcache/dataplane/wire"
)

// dedupKey names one request: transport.Call retransmits a request with the
// same sequence number, so (sender, sequence number, op) is its identity.
type dedupKey struct {
	src netip.AddrPort
	seq uint64
	op  wire.Op
}

// dedupEntry is the stored reply of a completed write. A request in
// progress has no entry of its own: its key maps to nil (see begin).
type dedupEntry struct {
	reply   wire.Message // owns its bytes
	expires time.Time
}

// expiring is a completed entry in the order of completion, which is the
// order of expiry because the TTL is fixed.
type expiring struct {
	key   dedupKey
	entry *dedupEntry
}

// dedupResult says what to do with a write request.
type dedupResult int

const (
	dedupNew        dedupResult = iota // first time: execute it
	dedupInProgress                    // a retransmit of a running write: drop it
	dedupDone                          // a retransmit of a completed write: resend the reply
)

// dedupTable makes a request run at most once at a time, and a write at
// most once per request: re-executing a
// retransmitted PUT after another client's later write would undo that write
// and break linearizability. Completed replies are kept for ttl; expired ones
// are swept lazily on every begin, so the table needs no goroutine.
type dedupTable struct {
	ttl time.Duration

	mu sync.Mutex // guards entries and expiry
	// entries maps a request in progress to nil, and a completed write to
	// its entry: most requests (every read) are never completed, and cost
	// no allocation.
	entries map[dedupKey]*dedupEntry
	expiry  []expiring // completed entries, oldest first
}

func newDedupTable(ttl time.Duration) *dedupTable {
	return &dedupTable{ttl: ttl, entries: make(map[dedupKey]*dedupEntry)}
}

// begin registers request k at now. For dedupDone it also returns the
// stored reply (shared: the caller must not modify it).
func (d *dedupTable) begin(k dedupKey, now time.Time) (dedupResult, wire.Message) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sweepLocked(now)
	if e, ok := d.entries[k]; ok {
		if e == nil {
			return dedupInProgress, wire.Message{}
		}
		return dedupDone, e.reply
	}
	d.entries[k] = nil
	return dedupNew, wire.Message{}
}

// complete stores the reply of request k, begun earlier, at now.
func (d *dedupTable) complete(k dedupKey, reply wire.Message, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.entries[k]; !ok || e != nil {
		return // abandoned, or completed already
	}
	e := &dedupEntry{reply: reply, expires: now.Add(d.ttl)}
	d.entries[k] = e
	d.expiry = append(d.expiry, expiring{key: k, entry: e})
}

// abandon forgets request k, begun earlier and not completed — a write that
// was not executed, or a read once answered (reads are never completed) —
// so that a later retransmit is served afresh.
func (d *dedupTable) abandon(k dedupKey) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.entries[k]; ok && e == nil {
		delete(d.entries, k)
	}
}

// sweepLocked drops the replies that expired by now.
func (d *dedupTable) sweepLocked(now time.Time) {
	n := 0
	for n < len(d.expiry) && !now.Before(d.expiry[n].entry.expires) {
		x := d.expiry[n]
		if d.entries[x.key] == x.entry {
			delete(d.entries, x.key)
		}
		d.expiry[n] = expiring{}
		n++
	}
	d.expiry = d.expiry[n:]
}

// len is the number of requests in progress or remembered.
func (d *dedupTable) len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.entries)
}
