package routing

import "fmt"

// This file is the sender's own view of its requests in flight, which the
// loads a node piggybacks cannot give (§4.2's telemetry only arrives with
// replies). A node that died, was paused or answers late sends no
// telemetry, and its aged load decays toward zero, so by loads alone it
// would look more attractive the longer it is silent. The table therefore
// also counts, per node, the requests sent and not yet answered or
// abandoned, and keeps a caught-up time: the send time of the latest
// request the node answered, or when its count last rose from zero. A node
// with requests in flight whose caught-up time is more than StallAfter in
// the past is stalled: it has answered nothing sent since then. That is a
// node that stopped (no answer at all) or one whose response time exceeds
// StallAfter (every answer is to a request sent long ago), and Router.Choose
// passes over it while any candidate is not stalled, as least-outstanding
// power-of-two-choices balancers do. It is tried again once its requests
// are answered or abandoned.

// WithStallAfter makes the table track requests in flight (Sent, Answered,
// Abandoned) and Router.Choose pass over a node stalled for longer than d
// ns. d must be > 0.
func WithStallAfter(d int64) TableOption {
	return func(t *LoadTable) error {
		if d <= 0 {
			return fmt.Errorf("%w: StallAfter must be > 0 ns, got %d", ErrInvalidConfig, d)
		}
		t.stallAfter = d
		return nil
	}
}

// Sent records a request sent to node at now. Every Sent must be followed
// by one Answered or Abandoned. A no-op without WithStallAfter or for a node
// >= MaxNodes.
func (t *LoadTable) Sent(node NodeID, now int64) {
	if t.stallAfter == 0 {
		return
	}
	e := t.entryFor(node)
	if e == nil {
		return
	}
	if e.inflight.Add(1) == 1 {
		advance(e, now) // idle until now: caught up
	}
}

// Answered records that node answered a request sent at sentAt.
func (t *LoadTable) Answered(node NodeID, sentAt int64) {
	if t.stallAfter == 0 {
		return
	}
	if e := lookup(t.chunks(), node); e != nil {
		advance(e, sentAt)
		done(e)
	}
}

// Abandoned records that a request to node will never be counted as
// answered: it timed out, or its sender stopped waiting.
func (t *LoadTable) Abandoned(node NodeID) {
	if t.stallAfter == 0 {
		return
	}
	if e := lookup(t.chunks(), node); e != nil {
		done(e)
	}
}

// AnsweredAfter reports whether node answered a request sent after at:
// its caught-up time is later (a count that rose from zero after at also
// moves it, which a caller that still counts a request sent at at rules
// out).
func (t *LoadTable) AnsweredAfter(node NodeID, at int64) bool {
	e := lookup(t.chunks(), node)
	return e != nil && e.caughtUp.Load() > at
}

// InFlight returns the requests to node sent and neither answered nor
// abandoned.
func (t *LoadTable) InFlight(node NodeID) int {
	if e := lookup(t.chunks(), node); e != nil {
		return int(e.inflight.Load())
	}
	return 0
}

// Stalled reports whether node has requests in flight and has answered
// none sent in the last StallAfter before now.
func (t *LoadTable) Stalled(node NodeID, now int64) bool {
	e := lookup(t.chunks(), node)
	return e != nil && t.stalled(e, now)
}

// stalled is Stalled for an entry.
func (t *LoadTable) stalled(e *entry, now int64) bool {
	return t.stallAfter != 0 && e.inflight.Load() > 0 && now-e.caughtUp.Load() > t.stallAfter
}

// advance moves e's caught-up time forward to at.
func advance(e *entry, at int64) {
	for {
		cur := e.caughtUp.Load()
		if at <= cur || e.caughtUp.CompareAndSwap(cur, at) {
			return
		}
	}
}

// done takes one request off e's count, never below zero.
func done(e *entry) {
	for {
		n := e.inflight.Load()
		if n <= 0 || e.inflight.CompareAndSwap(n, n-1) {
			return
		}
	}
}
