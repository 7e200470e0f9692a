package cachenode

import (
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
	arrived time.Time
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
	key     string
	digest  hashing.Digest
	waiters []waiter
	seen    map[waiterID]struct{}
	// shared marks a flight entered in Node.flights: readers after the
	// first may have joined after its request left, so they need a reply
	// the shim marked FlagTracked (see forward).
	shared bool
}

// miss serves a GET without a valid copy (or without the lease to serve
// it): it counts the key for the hot-key detector and joins or starts the
// key's flight or, while a write of the key is pending, parks the reader
// until the write's phase 2 (park.go). A reader shares another's backend
// read or waits for a write's phase 2 only for a key the node owns and
// while the node holds its serving lease: only then does every write of
// the key that completes before the reader arrived invalidate this node
// first, which seals the flight and records the pending write (Fencing in
// docs/dataplane.md). Any other reader starts a backend read of its own.
func (n *Node) miss(src netip.AddrPort, req *wire.Message, v *view, st entryState, start time.Time) {
	n.stats.misses.Add(1)
	key := bytesView(req.Key)
	owned := v.owns(key)
	if owned {
		n.det.RecordMiss(key)
	}
	if st == stateInvalid {
		// Cached but invalid: the key stays popular for eviction
		// decisions, and the next interval fetches it again.
		n.det.RecordHit(key)
	}
	w := waiter{src: src, seq: req.Seq, arrived: start}
	id := waiterID{src, req.Seq}
	n.missMu.Lock()
	shared := owned && n.leased(start)
	joinable := shared && !n.pending.active(key, start)
	if shared && !joinable && n.cfg.ParkTimeout > 0 {
		if pv, ok := n.pending.version(key); ok {
			switch n.park(req, w, pv) {
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
	if f := n.flights[key]; f != nil && joinable {
		if _, dup := f.seen[id]; dup {
			n.missMu.Unlock()
			n.stats.duplicates.Add(1) // a retransmission; the flight answers it
			return
		}
		f.seen[id] = struct{}{}
		f.waiters = append(f.waiters, w)
		n.missMu.Unlock()
		n.stats.coalesced.Add(1)
		return
	}
	f := &flight{
		key:     string(req.Key),
		digest:  req.Digest,
		waiters: []waiter{w},
		seen:    map[waiterID]struct{}{id: {}},
		shared:  joinable,
	}
	if joinable {
		n.flights[f.key] = f
	}
	n.missMu.Unlock()
	if !n.spawn(func() { n.forward(f, v) }) {
		n.finish(f) // closing: nobody will be answered
	}
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
	if n.flights[f.key] == f {
		delete(n.flights, f.key)
	}
	ws := f.waiters
	f.waiters, f.seen = nil, nil
	return ws
}

// forward reads f's key from its storage shim and relays the outcome to
// every waiter: the shim's status, value and version with this node's
// telemetry (no FlagHit); StatusUnavailable when the shim does not answer
// within BackendTimeout. The readers that joined a shared flight take the
// shim's answer only if it carries FlagTracked — the shim read the key
// while it invalidates this node for every later write of it, so a write
// that completed before a reader joined sealed the flight first; otherwise
// they are sent to the shim again, in a read that starts after they all
// arrived.
func (n *Node) forward(f *flight, v *view) {
	status, value, version, tracked := n.backendGet(f, v)
	ws := n.finish(f)
	answered := status == wire.StatusOK || status == wire.StatusNotFound
	if f.shared && !tracked && answered && len(ws) > 1 {
		n.stats.untracked.Add(uint64(len(ws) - 1))
		again := &flight{key: f.key, digest: f.digest, waiters: ws[1:]}
		ws = ws[:1]
		n.spawn(func() { n.forward(again, n.view.Load()) }) // closing: nobody will be answered
	}
	cur := n.view.Load()
	now := time.Now()
	reply := wire.Message{
		Header: wire.Header{
			Op: wire.OpGetReply, Status: status, Flags: wire.FlagTelemetry, Digest: f.digest,
			NodeID: cur.id, Load: n.loadAt(n.now(now)), ValueVersion: version, MapVersion: cur.version,
		},
		Key:   []byte(f.key),
		Value: value,
	}
	result := metrics.ResultMiss
	if status != wire.StatusOK {
		result = metrics.StatusResult(status)
	}
	n.answerWaiters(n.out, &reply, ws, result, now)
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
		n.reqs.Observe(wire.OpGet, result, now.Sub(w.arrived))
	}
}

// backendGet sends GET for f's key to its shim under v. tracked reports
// that the reply carried FlagTracked.
func (n *Node) backendGet(f *flight, v *view) (status wire.Status, value []byte, version uint64, tracked bool) {
	dst, ok := v.shim(f.key)
	if !ok {
		n.stats.backendErrors.Add(1)
		n.log.Debug("no shim address for key", "key", f.key, "map_version", v.version)
		return wire.StatusUnavailable, nil, 0, false
	}
	req := wire.Message{
		Header: wire.Header{Op: wire.OpGet, Digest: f.digest, MapVersion: v.version},
		Key:    []byte(f.key),
	}
	// A deadline of the call's own, not a context per miss.
	rep, err := n.ep.CallUntil(n.ctx, time.Now().Add(n.cfg.BackendTimeout), dst, &req)
	if err != nil {
		n.stats.backendErrors.Add(1)
		n.log.Debug("cannot read key from shim", "key", f.key, "shim", dst, "err", err)
		return wire.StatusUnavailable, nil, 0, false
	}
	return rep.Status, rep.Value, rep.ValueVersion, rep.Has(wire.FlagTracked)
}
