package cachenode

import (
	"net/netip"
	"time"

	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
)

// handle serves one request on a reader goroutine and replies through out,
// the reader's reply batch. req's Key and Value alias the receive buffer:
// every path that keeps them copies them first. No path blocks on the
// network or on another request, but the emulated capacity (Config.
// EmulatedRate) blocks the reader on purpose: a hit waits for its work
// unit, and the requests behind it queue in the socket buffer as they
// would at a busy server; an INVALIDATE or UPDATE of a held key spends its
// unit after its acknowledgement (spend, urgent).
func (n *Node) handle(out transport.Sender, src netip.AddrPort, req *wire.Message) {
	start := n.clock()
	v := n.view.Load()
	if v == nil {
		return // not reachable: Start requires a map
	}
	switch req.Op {
	case wire.OpGet:
		n.handleGet(out, src, req, v, start)
	case wire.OpInvalidate:
		n.handleInvalidate(out, src, req, v, start)
	case wire.OpUpdate:
		n.handleUpdate(out, src, req, v, start)
	case wire.OpPing:
		n.replyInPlace(out, src, req, v, n.loadAt(n.now(start)), wire.StatusOK, 0, 0, nil)
	case wire.OpFlush:
		n.handleFlush(out, src, req, v, start)
	default:
		// PUT, DEL and FETCH belong to the storage shim.
		n.stats.notOwner.Add(1)
		n.refuse(out, src, req, v, n.now(start), wire.StatusNotOwner, start, true)
	}
}

// handleGet serves a GET: a hit from the cache when the node holds a valid
// copy and its serving lease, otherwise a miss (lease.go). A node that is
// not Active in its map refuses with StatusNotOwner and its map version, so
// that a reader routing by an older map reads elsewhere and refreshes it.
// Hits, and the other reads of keys the node owns, are observed for its
// miss-ratio curve (curve.go). The hit path does not allocate.
func (n *Node) handleGet(out transport.Sender, src netip.AddrPort, req *wire.Message, v *view, start time.Time) {
	now := n.now(start)
	timed := n.countGet(now)%timedGets == 1
	n.stats.gets.Add(1)
	if !v.active {
		n.stats.refused.Add(1)
		n.refuse(out, src, req, v, now, wire.StatusNotOwner, start, timed)
		return
	}
	if n.draining.Load() { // stopping (drain.go): read elsewhere
		n.stats.refused.Add(1)
		n.refuse(out, src, req, v, now, wire.StatusUnavailable, start, timed)
		return
	}
	value, version, shim, st := n.store.lookup(req.Key)
	if (st == stateValid || st == stateMissing) && !n.servable(shim, now) {
		n.stats.unleased.Add(1) // fenced: the copy may have missed a write
		st = stateInvalid
	}
	if st != stateValid && st != stateMissing {
		owned := v.owns(bytesView(req.Key))
		if owned { // a read this node's LRU cache would see (curve.go)
			n.observeRead(req)
		}
		if req.Has(wire.FlagCacheOnly) { // a hedged read: a copy or nothing
			n.stats.cacheOnlyRefused.Add(1)
			n.refuse(out, src, req, v, now, wire.StatusUnavailable, start, timed)
			return
		}
		n.miss(out, src, req, v, st, owned, start, timed)
		return
	}
	n.observeRead(req)
	n.stats.hits.Add(1)
	n.det.RecordHit(bytesView(req.Key))
	// The hit's work unit. The value was read before the wait: a write
	// whose invalidation is applied meanwhile linearises after this read,
	// whose linearisation point is the lookup (the read was invoked before
	// it, and the write completes only after its invalidation).
	n.spend(out, 1)
	status := wire.StatusOK
	if st == stateMissing {
		status = wire.StatusNotFound // a negative entry: the key is not in storage
	}
	n.replyInPlace(out, src, req, v, n.loadAt(now), status, wire.FlagHit, version, value)
	n.reqs.Observe(wire.OpGet, metrics.ResultHit, since(start, timed))
}

// timedGets: the node times one GET in this many, hit or not, the first
// of each tally of the load meter and every timedGets-th after it, so a
// lightly loaded node times them all and the duration histogram mixes
// hits and misses as they come. A hit takes a microsecond or two, under
// the histogram's first bucket; reading the clock for its end and
// observing it was a twelfth of the hit's CPU. Every GET is counted.
const timedGets = 16

// since is the time from start to now for a timed request, and -1 (not
// timed: Requests.Observe counts it only) for another.
func since(start time.Time, timed bool) time.Duration {
	if !timed {
		return -1
	}
	return time.Since(start)
}

// refuse answers req with status and no value, at now on the node's clock,
// and observes it (arrived at start) under its op and status.
func (n *Node) refuse(out transport.Sender, src netip.AddrPort, req *wire.Message, v *view, now int64, status wire.Status, start time.Time, timed bool) {
	op := req.Op // replyInPlace turns req into the reply
	n.replyInPlace(out, src, req, v, n.loadAt(now), status, 0, 0, nil)
	n.reqs.Observe(op, metrics.StatusResult(status), since(start, timed))
}

// replyInPlace turns req into its reply (same seq, key and digest) with
// telemetry and sends it to src through out.
func (n *Node) replyInPlace(out transport.Sender, src netip.AddrPort, req *wire.Message, v *view, load uint32,
	status wire.Status, flags wire.Flag, valueVersion uint64, value []byte) {
	h := &req.Header
	h.Op = h.Op.Reply()
	h.Status = status
	h.Flags = flags | wire.FlagTelemetry
	h.NodeID, h.Load = v.id, load
	h.ValueVersion = valueVersion
	h.MapVersion = v.version
	req.Value = value
	if err := out.Send(src, req); err != nil {
		n.log.Debug("cannot send reply", "op", h.Op, "to", src, "err", err)
	}
}

// clock is the time now from the monotonic clock alone: time.Now also
// reads the wall clock, a third of a hit's clock reads. Its wall reading
// is the epoch's plus the time since, which nothing compares: the node's
// times are compared and subtracted on their monotonic readings.
func (n *Node) clock() time.Time { return n.epoch.Add(time.Since(n.epoch)) }

// now is t on the load meter's monotonic clock (ns since New).
func (n *Node) now(t time.Time) int64 { return int64(t.Sub(n.epoch)) }

// flusher is the reader's reply batch (transport.Handler): Flush sends the
// replies it holds.
type flusher interface{ Flush() }

// spend takes units of the node's emulated capacity. When they are not
// there yet, it first sends the replies out holds and forwards the misses
// queued so far (forward.go), so that the requests the reader has served
// do not wait for the ones behind them in its batch: a server sends each
// reply, and each miss to its shim, when it is done with it.
func (n *Node) spend(out transport.Sender, units int) {
	if n.work.TryTake(units) {
		return
	}
	if f, ok := out.(flusher); ok {
		f.Flush()
	}
	n.forwardQueued()
	n.work.Take(units)
}

// urgent is the node's control traffic, which its readers serve ahead of
// the reads in each receive batch (transport.Config.Urgent): the coherence
// of writes (INVALIDATE, UPDATE), which a writer waits for and which keeps
// the key uncacheable until it ends; health probes (PING), which must
// measure whether the node is alive rather than how long its queue is;
// and the shims' replies to the node's fetches, which readers wait for.
// Only reads queue for the emulated capacity behind one another.
func urgent(op wire.Op) bool { return op != wire.OpGet }
