package transport

import (
	"context"
	"fmt"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/distcache/distcache/dataplane/wire"
)

// call is an outstanding request of Call, waiting for its reply.
type call struct {
	dst   netip.AddrPort
	op    wire.Op
	reply chan wire.Message // buffered 1; receives the first matching reply
	// progress (buffered 1) is signalled when dst asks for the next
	// window of the request or sends a fragment of the reply: the
	// exchange is alive, so the retransmit interval starts over.
	progress chan struct{}
	// batch, for a call of CallMany, collects its reply in slot (reply
	// is nil).
	batch *batchWait
	slot  int
	// async is the CallManyFunc batch of the call (nil for the others).
	async *asyncBatch
	// sent is when the request was first sent, resent whether it was sent
	// again (or the rest of its reply asked for): only the round trips of
	// calls never sent again are samples of the peer's (Karn's rule).
	sent   time.Time
	resent atomic.Bool
}

// Call sends request m to dst with a fresh sequence number and waits for
// the reply, sending m again after Retransmit, then after twice as long
// each time (up to MaxRetransmit), until ctx ends; when part of a reply of
// several windows has arrived, it asks for the rest (MORE) instead, and a
// window of the request asked for or of the reply received starts the
// interval over (flow control, wire.Window). The reply is
// the first datagram (or reassembled message) from dst with m's reply op and
// sequence number; it owns its bytes.
func (e *Endpoint) Call(ctx context.Context, dst netip.AddrPort, m *wire.Message) (wire.Message, error) {
	return e.CallUntil(ctx, time.Time{}, dst, m)
}

// CallUntil is Call that also gives up at deadline (none when zero), with
// an error wrapping context.DeadlineExceeded: a per-attempt bound that
// costs no context of its own. A window of the exchange (of the request
// asked for, or of the reply received) moves the deadline on by as long
// as the call had at its start: a big message still coming in window by
// window is not abandoned because it takes longer than a small one.
func (e *Endpoint) CallUntil(ctx context.Context, deadline time.Time, dst netip.AddrPort, m *wire.Message) (wire.Message, error) {
	if e.closed.Load() {
		return wire.Message{}, fmt.Errorf("cannot call %s at %s: %w", m.Op, dst, ErrClosed)
	}
	m.Seq = e.NextSeq()
	// Sources are reported unmapped; so is the peer a reply must come from.
	c := &call{dst: unmapped(dst), op: m.Op.Reply(), reply: make(chan wire.Message, 1), progress: make(chan struct{}, 1), sent: time.Now()}
	e.mu.Lock()
	e.calls[m.Seq] = c
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.calls, m.Seq)
		e.mu.Unlock()
	}()
	interval := e.firstRetransmit(dst)
	budget := time.Until(deadline) // what the call may wait without progress
	t := time.NewTimer(wait(interval, deadline))
	defer t.Stop()
	if err := e.Send(dst, m); err != nil {
		return wire.Message{}, err
	}
	for {
		select {
		case r := <-c.reply:
			return r, nil
		case <-ctx.Done():
			return wire.Message{}, fmt.Errorf("cannot call %s at %s: %w", m.Op, dst, ctx.Err())
		case <-c.progress:
			interval = e.firstRetransmit(dst)
			deadline = movedOn(deadline, budget)
			t.Reset(wait(interval, deadline))
			continue
		case <-t.C:
			now, err := e.retransmitDue(t, &interval, deadline)
			if err != nil {
				return wire.Message{}, fmt.Errorf("cannot call %s at %s: %w", m.Op, dst, err)
			}
			e.stats.retransmits.Add(1)
			if err := e.resend(c, dst, m, now); err != nil {
				return wire.Message{}, err
			}
		}
	}
}

// retransmitDue is a call's retransmit timer t firing: ErrClosed or
// context.DeadlineExceeded when the call must end, else the time now, with
// the interval doubled (up to MaxRetransmit) and t set for the next.
func (e *Endpoint) retransmitDue(t *time.Timer, interval *time.Duration, deadline time.Time) (time.Time, error) {
	if e.closed.Load() {
		return time.Time{}, ErrClosed
	}
	now := time.Now()
	if !deadline.IsZero() && !now.Before(deadline) {
		return now, context.DeadlineExceeded
	}
	*interval = nextRetransmit(*interval, e.cfg.MaxRetransmit)
	t.Reset(wait(*interval, deadline))
	return now, nil
}

// resend sends request m of call c to dst again or, when part of its
// reply of several windows has arrived, asks for the rest (MORE) rather
// than have the request served again.
func (e *Endpoint) resend(c *call, dst netip.AddrPort, m *wire.Message, now time.Time) error {
	c.resent.Store(true)
	if m.Op.IsWrite() && m.Has(wire.FlagFirst) {
		// A datagram of the request went out before. A copy: the caller's
		// message may still be being sent (CallManyFunc's first send).
		again := *m
		again.Flags &^= wire.FlagFirst
		m = &again
	}
	from, n, ok := e.reasm.AskAgain(c.dst, c.op, m.Seq, now)
	if !ok {
		return e.Send(dst, m)
	}
	more := wire.NewMore(m.Seq, m.Key, n, from)
	if err := e.Send(dst, &more); err != nil {
		return err
	}
	e.stats.moreOut.Add(1)
	return nil
}

// wait is how long a call waits before it sends again: interval, or less
// when deadline (if set) comes first.
func wait(interval time.Duration, deadline time.Time) time.Duration {
	if deadline.IsZero() {
		return interval
	}
	return max(min(interval, time.Until(deadline)), 0)
}

// movedOn is a call's deadline once its exchange has moved on: as far from
// now as the call had at its start (budget). No deadline stays none.
func movedOn(deadline time.Time, budget time.Duration) time.Time {
	if deadline.IsZero() {
		return deadline
	}
	return time.Now().Add(budget)
}

// nextRetransmit is the interval after cur: twice as long, at most limit.
func nextRetransmit(cur, limit time.Duration) time.Duration { return min(2*cur, limit) }

// progressed signals the call of seq to src, if there is one, that src is
// moving its exchange on (call.progress).
func (e *Endpoint) progressed(src netip.AddrPort, seq uint64) {
	e.mu.Lock()
	c := e.calls[seq]
	e.mu.Unlock()
	if c == nil || c.dst != src {
		return
	}
	if c.async != nil {
		c.async.moved.Store(true)
		return
	}
	select {
	case c.progress <- struct{}{}:
	default:
	}
}
