package cachenode

import (
	"time"

	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/placement/hashing"
)

// parkCap bounds the readers parked on one key; more start their own
// backend read, as they would without parking.
const parkCap = 1024

// parkedWaiter is a reader parked on a pending write.
type parkedWaiter struct {
	waiter
	// version is the version of the key's pending write when the reader
	// parked: only the phase 2 of that write or of a later one answers it.
	version uint64
}

// parkedReads are the readers of one key that arrived while a write of the
// key was pending (between its INVALIDATE and its UPDATE). A backend read
// started then could precede the write's Redis write and still be answered
// after the write is acknowledged, so they cannot share one; instead they
// wait for the write's phase 2, which carries the written value (DistCache
// §4.3: the UPDATE brings the new value to the caches). Guarded by
// Node.missMu.
type parkedReads struct {
	key     string
	waiters []parkedWaiter
	seen    map[waiterID]struct{}
	timer   stopper // forwards the readers still parked after ParkTimeout
}

// stopper is a started timer, as time.AfterFunc returns.
type stopper interface{ Stop() bool }

// parkResult is the outcome of park.
type parkResult uint8

const (
	parkedNew       parkResult = iota // parked
	parkedDuplicate                   // a retransmission of a parked reader: dropped
	parkFull                          // parkCap readers parked already: not parked
)

// park parks the reader w of req's key on the pending write of version v.
// The caller holds Node.missMu.
func (n *Node) park(req *wire.Message, w waiter, v uint64) parkResult {
	key := bytesView(req.Key)
	id := waiterID{w.src, w.seq}
	p := n.parked[key]
	if p == nil {
		p = &parkedReads{key: string(req.Key), seen: make(map[waiterID]struct{})}
		p.timer = n.parkAfter(n.cfg.ParkTimeout, func() { n.parkExpired(p) })
		n.parked[p.key] = p
	}
	if _, dup := p.seen[id]; dup {
		return parkedDuplicate
	}
	if len(p.waiters) >= parkCap {
		return parkFull
	}
	p.seen[id] = struct{}{}
	p.waiters = append(p.waiters, parkedWaiter{waiter: w, version: v})
	return parkedNew
}

// unpark removes and returns the readers of key that the phase 2 of the
// write of version v answers: those parked under version v or earlier.
// The caller holds Node.missMu.
func (n *Node) unpark(key []byte, v uint64) []waiter {
	p := n.parked[bytesView(key)]
	if p == nil {
		return nil
	}
	var ready []waiter
	rest := p.waiters[:0]
	for _, w := range p.waiters {
		if w.version <= v {
			ready = append(ready, w.waiter)
			delete(p.seen, waiterID{w.src, w.seq})
		} else {
			rest = append(rest, w)
		}
	}
	p.waiters = rest
	if len(rest) == 0 {
		p.timer.Stop()
		delete(n.parked, p.key)
	}
	return ready
}

// parkExpired forwards the readers still parked on p when ParkTimeout
// passes without the phase 2 that answers them (lost, or the write is slow):
// they share one backend read, started now, after every one of them
// arrived, so it is as recent as each of them needs.
//
// The write they waited for is then late (pendingWrite.late): readers of
// the key that arrive while it is still pending do not park on it again.
// A write that waits for a holder that does not acknowledge stays pending
// until the lease that holder was granted ends (docs/dataplane.md,
// Leases), and readers of a surviving copy would otherwise each wait
// ParkTimeout for nothing until then.
func (n *Node) parkExpired(p *parkedReads) {
	n.missMu.Lock()
	if n.parked[p.key] == p {
		delete(n.parked, p.key)
	}
	ws := make([]waiter, len(p.waiters))
	var newest uint64 // the latest write any of them waited for
	for i, w := range p.waiters {
		ws[i] = w.waiter
		newest = max(newest, w.version)
	}
	if len(ws) > 0 {
		n.pending.markLate(p.key, newest)
	}
	p.waiters, p.seen = nil, nil
	n.missMu.Unlock()
	n.forwardParked(p.key, ws)
}

// forwardParked sends key's parked readers ws to the shim as one backend
// read that no later reader joins.
func (n *Node) forwardParked(key string, ws []waiter) {
	if len(ws) == 0 {
		return
	}
	n.stats.parkForwarded.Add(uint64(len(ws)))
	// Never in Node.flights, so nobody joins it and it needs no seen set;
	// the digest is computed from the key.
	f := newFlight([]byte(key), hashing.Digest{}, ws)
	v := n.view.Load()
	n.spawn(func() { n.forward(f, v) }) // closing: nobody will be answered
}

// answerParked answers the readers ws released by upd, the phase 2 of a
// write, through out (the reader's reply batch): a PUT's UPDATE answers
// them with its value and version, a DEL's with StatusNotFound; a failed
// write's sends them to the shim. When the UPDATE refreshed the node's copy
// (applied) the answers are hits and cost a work unit each; otherwise they
// are relayed misses, free like one.
func (n *Node) answerParked(out transport.Sender, upd *wire.Message, v *view, ws []waiter, applied bool, start time.Time) {
	if len(ws) == 0 {
		return
	}
	if upd.Status != wire.StatusOK && upd.Status != wire.StatusNotFound {
		n.forwardParked(string(upd.Key), ws)
		return
	}
	var flags wire.Flag
	result := metrics.ResultMiss
	if upd.Status == wire.StatusNotFound {
		result = metrics.StatusResult(wire.StatusNotFound)
	}
	if applied {
		n.spend(out, len(ws))
		flags, result = wire.FlagHit, metrics.ResultHit
	}
	reply := wire.Message{
		Header: wire.Header{
			Op: wire.OpGetReply, Status: upd.Status, Flags: flags | wire.FlagTelemetry,
			NodeID: v.id, Load: n.loadAt(n.now(start)), ValueVersion: upd.ValueVersion, MapVersion: v.version,
		},
		Key:   upd.Key,
		Value: upd.Value,
	}
	n.answerWaiters(out, &reply, ws, result, time.Now())
}
