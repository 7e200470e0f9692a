package cachenode

import (
	"bytes"
	"net/netip"
	"time"

	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/placement/hashing"
)

// waiter is a reader waiting for a flight's reply.
type waiter struct {
	src     netip.AddrPort
	seq     uint64
	arrived time.Time // zero: not timed (timedGets)
}

// waiterID identifies a request; a retransmission has the same one.
type waiterID struct {
	src netip.AddrPort
	seq uint64
}

// flight is one backend read of a key shared by every miss of the key that
// arrives while it is pending (CableCache's request coalescing). Its waiters
// are guarded by Node.missMu; once removed from Node.flights (sealed by an
// invalidation or a map change, or done) it takes no new waiters. A flight
// started while a write of its key is pending (pendingWrites), or that
// others may not share (see miss), is never in Node.flights.
type flight struct {
	kb      []byte // the key, owned by the flight and never written
	digest  hashing.Digest
	waiters []waiter
	first   [1]waiter // waiters' first array
	// seen holds the waiters' IDs once there are more than seenScan of
	// them; before, a duplicate is found by scanning waiters.
	seen map[waiterID]struct{}
	// shared marks a flight entered in Node.flights: readers after the
	// first may have joined after its request left, so they need a reply
	// the shim marked FlagTracked (see forward).
	shared bool
}

// miss serves a GET without a valid copy (or without the lease to serve
// it), of a key the node owns under v or not (owned, as handleGet found
// it): it counts an owned key for the hot-key detector and joins or
// starts the key's flight or, while a write of the key is pending, parks
// the reader until the write's phase 2 (park.go). A reader shares
// another's backend read or waits for a write's phase 2 only for a key the
// node owns and while the node holds its serving lease: only then does
// every write of the key that completes before the reader arrived
// invalidate this node first, which seals the flight and records the
// pending write (Fencing in docs/dataplane.md). Any other reader starts a
// backend read of its own, unless it reads storage itself (wire.FlagDirect):
// then it is told so at once, through out.
func (n *Node) miss(out transport.Sender, src netip.AddrPort, req *wire.Message, v *view, st entryState, owned bool, start time.Time, timed bool) {
	n.stats.misses.Add(1)
	key := bytesView(req.Key)
	if owned {
		n.det.RecordMiss(key)
	}
	if st == stateInvalid {
		// Cached but invalid: the key stays popular for eviction
		// decisions, and the next interval fetches it again.
		n.det.RecordHit(key)
	}
	w := waiter{src: src, seq: req.Seq}
	if timed {
		w.arrived = start
	}
	n.missMu.Lock()
	shared := owned && n.servable(int32(v.p.ShardIndex(key)), n.now(start))
	joinable := shared && !n.pending.active(key, start)
	if shared && !joinable && n.cfg.ParkTimeout > 0 {
		if pw, ok := n.pending.lookup(key); ok && pw.late {
			n.stats.parkSkipped.Add(1) // a reader waited for it already: read on
		} else if ok {
			switch n.park(req, w, pw.version) {
			case parkedNew:
				n.missMu.Unlock()
				n.stats.parked.Add(1)
				return
			case parkedDuplicate:
				n.missMu.Unlock()
				n.stats.duplicates.Add(1) // a retransmission; the write's phase 2 answers it
				return
			case parkFull: // start a backend read of its own
			}
		}
	}
	if req.Has(wire.FlagDirect) {
		n.missMu.Unlock()
		n.readsElsewhere(out, src, req, v, start, timed)
		return
	}
	if f := n.flights[key]; f != nil && joinable {
		if !f.join(w) {
			n.missMu.Unlock()
			n.stats.duplicates.Add(1) // a retransmission; the flight answers it
			return
		}
		n.missMu.Unlock()
		n.stats.coalesced.Add(1)
		return
	}
	f := newFlight(bytes.Clone(req.Key), req.Digest, nil)
	f.first[0] = w
	f.waiters = f.first[:]
	f.shared = joinable
	if joinable {
		n.flights[f.key()] = f
	}
	n.missMu.Unlock()
	n.queueForward(f, v)
}

// readsElsewhere answers a miss whose reader reads storage itself
// (wire.FlagDirect): StatusUnavailable with FlagDirect, and telemetry, as
// cheap as a hit. A write's coherence does not depend on it: the reader
// reads Redis after this node has seen the read, and every write of the
// key reaches Redis only after its invalidation here.
func (n *Node) readsElsewhere(out transport.Sender, src netip.AddrPort, req *wire.Message, v *view, start time.Time, timed bool) {
	n.stats.directMisses.Add(1)
	n.replyInPlace(out, src, req, v, n.loadAt(n.now(start)), wire.StatusUnavailable, wire.FlagDirect, 0, nil)
	n.reqs.Observe(wire.OpGet, metrics.ResultMiss, since(start, timed))
}

// newFlight is a flight of key kb, which it owns from now on, for
// waiters ws.
func newFlight(kb []byte, digest hashing.Digest, ws []waiter) *flight {
	return &flight{kb: kb, digest: digest, waiters: ws}
}

// key is the flight's key as a string, a view of kb (no copy).
func (f *flight) key() string { return bytesView(f.kb) }

// seenScan is how many waiters a flight scans for a duplicate before it
// keeps their IDs in a set.
const seenScan = 8

// join adds w to f's waiters, unless it is one already (a retransmission).
func (f *flight) join(w waiter) bool {
	id := waiterID{w.src, w.seq}
	if f.seen != nil {
		if _, dup := f.seen[id]; dup {
			return false
		}
		f.seen[id] = struct{}{}
	} else {
		for _, o := range f.waiters {
			if o.src == w.src && o.seq == w.seq {
				return false
			}
		}
		if len(f.waiters) >= seenScan {
			f.seen = make(map[waiterID]struct{}, 2*seenScan)
			for _, o := range f.waiters {
				f.seen[waiterID{o.src, o.seq}] = struct{}{}
			}
			f.seen[id] = struct{}{}
		}
	}
	f.waiters = append(f.waiters, w)
	return true
}

// sealFlights removes every flight from the table: readers arriving from
// now on start new backend reads (a map change).
func (n *Node) sealFlights() {
	n.missMu.Lock()
	clear(n.flights)
	n.missMu.Unlock()
}

// beginWrite records phase 1 of the write of version v to key and seals the
// key's flight, so that readers arriving from now on start a new backend
// read and, until phase 2 arrives, do not share it.
func (n *Node) beginWrite(key []byte, v uint64, now time.Time) {
	n.missMu.Lock()
	delete(n.flights, string(key))
	n.pending.begin(string(key), v, now)
	n.missMu.Unlock()
}

// endWrite records phase 2 of the write of version v to key and returns
// the readers it releases (unpark).
func (n *Node) endWrite(key []byte, v uint64) []waiter {
	n.missMu.Lock()
	defer n.missMu.Unlock()
	n.pending.end(key, v)
	return n.unpark(key, v)
}

// finish removes f from the flight table (unless sealed already) and
// returns its waiters; f takes no new ones afterwards.
func (n *Node) finish(f *flight) []waiter {
	n.missMu.Lock()
	defer n.missMu.Unlock()
	if n.flights[f.key()] == f {
		delete(n.flights, f.key())
	}
	ws := f.waiters
	f.waiters, f.seen = nil, nil
	return ws
}

// answerWaiters sends reply to every waiter of ws, each with its own
// sequence number, through out, and records each request's result and
// latency up to now.
func (n *Node) answerWaiters(out transport.Sender, reply *wire.Message, ws []waiter, result string, now time.Time) {
	if reply.Status == wire.StatusNotFound {
		n.stats.notFound.Add(uint64(len(ws)))
	}
	for _, w := range ws {
		reply.Seq = w.seq
		if err := out.Send(w.src, reply); err != nil {
			n.log.Debug("cannot answer a waiting read", "key", string(reply.Key), "to", w.src, "err", err)
		}
		took := time.Duration(-1) // not timed
		if !w.arrived.IsZero() {
			took = now.Sub(w.arrived)
		}
		n.reqs.Observe(wire.OpGet, result, took)
	}
}
