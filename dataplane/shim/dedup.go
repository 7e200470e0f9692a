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

// dedupID is a dedupKey as the table keeps it: without pointers, so that
// a table of many thousand remembered writes costs the garbage collector
// nothing to scan.
type dedupID struct {
	addr [16]byte
	port uint16
	op   wire.Op
	seq  uint64
}

func idOf(k dedupKey) dedupID {
	return dedupID{addr: k.src.Addr().As16(), port: k.src.Port(), op: k.op, seq: k.seq}
}

// dedupEntry is a request in progress (done false) or the stored reply of
// a completed write: its header fields; an RMW's result, the only value a
// write's reply carries, is in dedupTable.values. The reply's op and
// sequence number are the request's, and its key the retransmission's.
type dedupEntry struct {
	done       bool
	status     wire.Status
	flags      wire.Flag
	expires    int64 // ns after the table's epoch
	version    uint64
	mapVersion uint64
}

// expiring is a completed entry in the order of completion, which is the
// order of expiry because the TTL is fixed.
type expiring struct {
	id      dedupID
	expires int64
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
	ttl   time.Duration
	epoch time.Time // times are kept as ns after it

	mu      sync.Mutex // guards entries, values and expiry
	entries map[dedupID]dedupEntry
	values  map[dedupID][]byte // the values of stored replies that carry one
	expiry  []expiring         // completed entries, oldest first
}

func newDedupTable(ttl time.Duration) *dedupTable {
	return &dedupTable{ttl: ttl, epoch: time.Now(), entries: make(map[dedupID]dedupEntry), values: make(map[dedupID][]byte)}
}

// begin registers request k at now. For dedupDone it also returns the
// stored reply without its key (its value is shared: the caller must not
// modify it).
func (d *dedupTable) begin(k dedupKey, now time.Time) (dedupResult, wire.Message) {
	id := idOf(k)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sweepLocked(now)
	if e, ok := d.entries[id]; ok {
		if !e.done {
			return dedupInProgress, wire.Message{}
		}
		return dedupDone, wire.Message{
			Header: wire.Header{Op: k.op.Reply(), Flags: e.flags, Status: e.status, Seq: k.seq, ValueVersion: e.version, MapVersion: e.mapVersion},
			Value:  d.values[id],
		}
	}
	d.entries[id] = dedupEntry{}
	return dedupNew, wire.Message{}
}

// complete stores the reply of request k, begun earlier, at now: its
// header fields and its value (copied).
func (d *dedupTable) complete(k dedupKey, reply wire.Message, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.completeLocked(idOf(k), reply, int64(now.Add(d.ttl).Sub(d.epoch)))
}

// completeMany is complete for requests ks and their replies, at once.
func (d *dedupTable) completeMany(ks []dedupKey, replies []wire.Message, now time.Time) {
	expires := int64(now.Add(d.ttl).Sub(d.epoch))
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, k := range ks {
		d.completeLocked(idOf(k), replies[i], expires)
	}
}

// completeLocked stores the reply of request id, begun earlier, until
// expires.
func (d *dedupTable) completeLocked(id dedupID, reply wire.Message, expires int64) {
	if e, ok := d.entries[id]; !ok || e.done {
		return // abandoned, or completed already
	}
	d.entries[id] = dedupEntry{done: true, status: reply.Status, flags: reply.Flags, expires: expires,
		version: reply.ValueVersion, mapVersion: reply.MapVersion}
	if len(reply.Value) > 0 {
		d.values[id] = append([]byte(nil), reply.Value...)
	}
	d.expiry = append(d.expiry, expiring{id: id, expires: expires})
}

// abandon forgets request k, begun earlier and not completed — a write that
// was not executed, or a read once answered (reads are never completed) —
// so that a later retransmit is served afresh.
func (d *dedupTable) abandon(k dedupKey) {
	id := idOf(k)
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.entries[id]; ok && !e.done {
		delete(d.entries, id)
	}
}

// sweepLocked drops the replies that expired by now. An expiring item's
// entry is the completed one it was queued for: nothing changes a
// completed entry, and a request begun again after the entry left is
// queued anew.
func (d *dedupTable) sweepLocked(now time.Time) {
	t := int64(now.Sub(d.epoch))
	n := 0
	for n < len(d.expiry) && t >= d.expiry[n].expires {
		id := d.expiry[n].id
		delete(d.entries, id)
		if len(d.values) > 0 {
			delete(d.values, id)
		}
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
