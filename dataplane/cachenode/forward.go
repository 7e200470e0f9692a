package cachenode

import (
	"net/netip"
	"sync"
	"time"

	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
)

// forwardQueue holds the flights that the misses of the receive batches
// being served started. The reader that served a batch forwards them when
// the batch ends (transport.Config.AfterBatch, forwardQueued): the flights
// bound for one shim leave as one transport.Endpoint.CallManyFunc — their
// requests in one sendmmsg (and, with bundles, one datagram), and their
// replies relayed by the reader that receives them, with no goroutine
// waiting — instead of a goroutine, a system call and a wake-up each. A
// reader may forward another's flights with its own; every queued flight
// is forwarded by the end of the batch that queued it.
type forwardQueue struct {
	mu sync.Mutex // guards fs
	fs []queuedFlight
}

// queuedFlight is a flight waiting for its batch's end, with the view it
// started under.
type queuedFlight struct {
	f *flight
	v *view
}

// queueForward queues f's backend read until the receive batch ends.
func (n *Node) queueForward(f *flight, v *view) {
	q := &n.forwards
	q.mu.Lock()
	q.fs = append(q.fs, queuedFlight{f, v})
	q.mu.Unlock()
}

// forwardQueued forwards the queued flights: those bound for one shim
// under one view together, in one CallManyFunc (forwardMany). Nothing
// waits for the shim: the reader that receives the group's last reply
// relays the outcomes.
func (n *Node) forwardQueued() {
	q := &n.forwards
	q.mu.Lock()
	fs := q.fs
	q.fs = nil
	q.mu.Unlock()
	for len(fs) > 0 {
		first := fs[0]
		dst, ok := first.v.shim(first.f.key())
		group := []*flight{first.f}
		rest := fs[:0]
		for _, qf := range fs[1:] {
			if d, same := qf.v.shim(qf.f.key()); ok && same && qf.v == first.v && d == dst {
				group = append(group, qf.f)
			} else {
				rest = append(rest, qf)
			}
		}
		fs = rest
		if !ok {
			n.stats.backendErrors.Add(1)
			n.log.Debug("no shim address for key", "key", first.f.key(), "map_version", first.v.version)
			n.settle(n.ep, first.f, wire.StatusUnavailable, nil, 0, false)
			continue
		}
		n.forwardMany(group, first.v, dst)
	}
}

// forward reads f's key from its storage shim and relays the outcome
// (settle), on the calling goroutine.
func (n *Node) forward(f *flight, v *view) {
	status, value, version, tracked := n.backendGet(f, v)
	n.settle(n.ep, f, status, value, version, tracked)
}

// forwardMany reads the keys of the flights fs, all bound for shim dst
// under v, in one CallManyFunc, and relays each outcome (settle), the
// replies to all their readers sent together, when the group's last reply
// arrives (or at the backend timeout): on the reader that received it, or
// on the endpoint's timer.
func (n *Node) forwardMany(fs []*flight, v *view, dst netip.AddrPort) {
	if len(fs) > 1 {
		n.stats.backendBatches.Add(1)
		n.stats.backendBatched.Add(uint64(len(fs)))
	}
	msgs := make([]wire.Message, len(fs))
	reqs := make([]transport.Request, len(fs))
	for i, f := range fs {
		msgs[i] = backendRequest(f, v)
		reqs[i] = transport.Request{Dst: dst, Msg: &msgs[i]}
	}
	n.ep.CallManyFunc(time.Now().Add(n.cfg.BackendTimeout), reqs, func(out []transport.Reply) {
		var replies replyBatch
		for i, f := range fs {
			status, value, version, tracked := n.backendOutcome(f, dst, &out[i].Msg, out[i].Err)
			n.settle(&replies, f, status, value, version, tracked)
		}
		if err := n.ep.SendMany(replies.requests()); err != nil {
			n.log.Debug("cannot answer waiting reads", "replies", len(replies.msgs), "err", err)
		}
	})
}

// replyBatch is a transport.Sender that keeps what it is given, for one
// Endpoint.SendMany.
type replyBatch struct {
	msgs []wire.Message
	dsts []netip.AddrPort
}

// Send keeps a copy of m (its Key and Value shared) for dst.
func (b *replyBatch) Send(dst netip.AddrPort, m *wire.Message) error {
	b.msgs = append(b.msgs, *m)
	b.dsts = append(b.dsts, dst)
	return nil
}

// requests are the kept messages as SendMany's requests.
func (b *replyBatch) requests() []transport.Request {
	reqs := make([]transport.Request, len(b.msgs))
	for i := range b.msgs {
		reqs[i] = transport.Request{Dst: b.dsts[i], Msg: &b.msgs[i]}
	}
	return reqs
}

// settle relays the outcome of f's backend read to every waiter, through
// out: the shim's status, value and version with this node's telemetry
// (no FlagHit); StatusUnavailable when the shim did not answer within
// BackendTimeout. The readers that joined a shared flight take the shim's
// answer only if it carries FlagTracked — the shim read the key while it
// invalidates this node for every later write of it, so a write that
// completed before a reader joined sealed the flight first; otherwise they
// are sent to the shim again, in a read that starts after they all
// arrived.
func (n *Node) settle(out transport.Sender, f *flight, status wire.Status, value []byte, version uint64, tracked bool) {
	ws := n.finish(f)
	answered := status == wire.StatusOK || status == wire.StatusNotFound
	if f.shared && !tracked && answered && len(ws) > 1 {
		n.stats.untracked.Add(uint64(len(ws) - 1))
		again := newFlight(f.kb, f.digest, ws[1:])
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
		Key:   f.kb,
		Value: value,
	}
	result := metrics.ResultMiss
	if status != wire.StatusOK {
		result = metrics.StatusResult(status)
	}
	n.answerWaiters(out, &reply, ws, result, now)
}

// backendRequest is the GET of f's key that its shim is sent under v.
func backendRequest(f *flight, v *view) wire.Message {
	return wire.Message{
		Header: wire.Header{Op: wire.OpGet, Digest: f.digest, MapVersion: v.version},
		Key:    f.kb,
	}
}

// backendGet sends GET for f's key to its shim under v. tracked reports
// that the reply carried FlagTracked.
func (n *Node) backendGet(f *flight, v *view) (status wire.Status, value []byte, version uint64, tracked bool) {
	dst, ok := v.shim(f.key())
	if !ok {
		n.stats.backendErrors.Add(1)
		n.log.Debug("no shim address for key", "key", f.key(), "map_version", v.version)
		return wire.StatusUnavailable, nil, 0, false
	}
	req := backendRequest(f, v)
	// A deadline of the call's own, not a context per miss.
	rep, err := n.ep.CallUntil(n.ctx, time.Now().Add(n.cfg.BackendTimeout), dst, &req)
	return n.backendOutcome(f, dst, &rep, err)
}

// backendOutcome is the outcome of a backend read of f's key from shim
// dst: its reply rep, or err.
func (n *Node) backendOutcome(f *flight, dst netip.AddrPort, rep *wire.Message, err error) (status wire.Status, value []byte, version uint64, tracked bool) {
	if err != nil {
		n.stats.backendErrors.Add(1)
		n.log.Debug("cannot read key from shim", "key", f.key(), "shim", dst, "err", err)
		return wire.StatusUnavailable, nil, 0, false
	}
	return rep.Status, rep.Value, rep.ValueVersion, rep.Has(wire.FlagTracked)
}
