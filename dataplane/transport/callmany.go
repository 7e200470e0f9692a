package transport

import (
	"context"
	"fmt"
	"net/netip"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/distcache/distcache/dataplane/wire"
)

// Request is one request of CallMany: a message for a destination.
type Request struct {
	Dst netip.AddrPort
	Msg *wire.Message // CallMany sets its Seq
}

// Reply is the outcome of one request of CallMany: its reply (owning its
// bytes), or the error that ended the wait for it.
type Reply struct {
	Msg wire.Message
	Err error
}

// batchWait collects the replies a CallMany waits for, in slots of its
// own rather than a channel per call.
type batchWait struct {
	left  atomic.Int32
	done  chan struct{} // buffered 1: signalled when left reaches 0
	slots []replySlot   // one per request
	// progress (buffered 1) is signalled as a call's is (call.progress)
	// when any of the exchanges moves on.
	progress chan struct{}
	// onDone, when set, is called instead of signalling done, by the
	// goroutine that delivered the last reply (CallManyFunc).
	onDone func()
}

// A replySlot's state: empty, then filling and full when a reply arrives,
// or closed when the wait ended without one. Only the goroutine that moved
// it out of empty writes its message.
const (
	slotEmpty uint32 = iota
	slotFilling
	slotFull
	slotClosed
)

// replySlot holds one request's reply.
type replySlot struct {
	state atomic.Uint32
	msg   wire.Message // written between slotFilling and slotFull
}

// deliver puts reply r into slot i, and reports false when the slot has
// one already or its wait ended.
func (b *batchWait) deliver(i int, r wire.Message) bool {
	s := &b.slots[i]
	if !s.state.CompareAndSwap(slotEmpty, slotFilling) {
		return false
	}
	s.msg = r
	s.state.Store(slotFull)
	if b.left.Add(-1) == 0 {
		if b.onDone != nil {
			b.onDone()
		} else {
			b.done <- struct{}{}
		}
	}
	return true
}

// answered reports whether slot i has a reply (or is getting one).
func (b *batchWait) answered(i int) bool { return b.slots[i].state.Load() != slotEmpty }

// take closes slot i and returns its reply, if one came: a reader that
// began filling it is waited for.
func (b *batchWait) take(i int) (wire.Message, bool) {
	s := &b.slots[i]
	if s.state.CompareAndSwap(slotEmpty, slotClosed) {
		return wire.Message{}, false
	}
	for s.state.Load() != slotFull { // a reader is between its two stores
		runtime.Gosched()
	}
	return s.msg, true
}

// CallMany is CallUntil for several requests at once, for a caller with
// many to make (a gateway's pipeline). The requests leave together — in
// as few sendmmsg calls as the send queue allows, instead of a system call
// or a hand-off each — and the caller wakes once: when every request is
// answered, at deadline (none when zero) or when ctx ends. A window of any
// of the exchanges moves the deadline on by as long as the calls had at
// the start, as CallUntil's do. A request still
// unanswered after Retransmit is sent again (or the rest of its reply
// asked for), then after twice as long each time, as Call's are. out[i]
// is the outcome of reqs[i]; out must be as long as reqs.
func (e *Endpoint) CallMany(ctx context.Context, deadline time.Time, reqs []Request, out []Reply) {
	if len(reqs) == 0 {
		return // nothing would ever signal the wait
	}
	if e.closed.Load() {
		fail(reqs, out, ErrClosed)
		return
	}
	b := newBatchWait(len(reqs))
	b.done, b.progress = make(chan struct{}, 1), make(chan struct{}, 1)
	calls := e.register(reqs, b, nil)
	defer e.unregister(reqs)
	b.collect(reqs, e.waitMany(ctx, deadline, reqs, calls, b), out)
}

// newBatchWait is the wait of n requests, none answered yet.
func newBatchWait(n int) *batchWait {
	b := &batchWait{slots: make([]replySlot, n)}
	b.left.Store(int32(n))
	return b
}

// register gives each request of reqs a fresh sequence number and a call
// that delivers its reply into b's slot of the same index (and belongs to
// async, for CallManyFunc), sent now.
func (e *Endpoint) register(reqs []Request, b *batchWait, async *asyncBatch) []call {
	calls := make([]call, len(reqs))
	now := time.Now()
	e.mu.Lock()
	for i, r := range reqs {
		r.Msg.Seq = e.NextSeq()
		calls[i] = call{dst: unmapped(r.Dst), op: r.Msg.Op.Reply(), batch: b, slot: i, progress: b.progress, async: async, sent: now}
		e.calls[r.Msg.Seq] = &calls[i]
	}
	e.mu.Unlock()
	return calls
}

// unregister forgets the calls of reqs: replies to them are unmatched.
func (e *Endpoint) unregister(reqs []Request) {
	e.mu.Lock()
	for _, r := range reqs {
		delete(e.calls, r.Msg.Seq)
	}
	e.mu.Unlock()
}

// collect closes b's slots and writes out[i], the outcome of reqs[i]: its
// reply, or err for a request that got none.
func (b *batchWait) collect(reqs []Request, err error, out []Reply) {
	for i, r := range reqs {
		if m, ok := b.take(i); ok {
			out[i] = Reply{Msg: m}
		} else {
			out[i] = Reply{Err: fmt.Errorf("cannot call %s at %s: %w", r.Msg.Op, r.Dst, err)}
		}
	}
}

// resendUnanswered sends again (or asks for the rest of) each request of
// reqs that b has no reply for, as of now.
func (e *Endpoint) resendUnanswered(reqs []Request, calls []call, b *batchWait, now time.Time) error {
	for i := range calls {
		if b.answered(i) {
			continue
		}
		e.stats.retransmits.Add(1)
		if err := e.resend(&calls[i], reqs[i].Dst, reqs[i].Msg, now); err != nil {
			return err
		}
	}
	return nil
}

// waitMany sends the requests of CallMany and waits for their replies; it
// returns why it stopped waiting before every one arrived (nil when it did
// not).
func (e *Endpoint) waitMany(ctx context.Context, deadline time.Time, reqs []Request, calls []call, b *batchWait) error {
	if err := e.sendMany(reqs); err != nil {
		return err
	}
	interval := e.batchRetransmit(reqs)
	budget := time.Until(deadline) // what the calls may wait without progress
	t := time.NewTimer(wait(interval, deadline))
	defer t.Stop()
	for {
		select {
		case <-b.done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-b.progress:
			// A window moved on: the deadline moves on as CallUntil's
			// does. The timer is left alone, so that the other requests
			// are still sent again on time (one firing at the old
			// deadline sends a round early, no more).
			deadline = movedOn(deadline, budget)
			continue
		case <-t.C:
		}
		now, err := e.retransmitDue(t, &interval, deadline)
		if err != nil {
			return err
		}
		if err := e.resendUnanswered(reqs, calls, b, now); err != nil {
			return err
		}
	}
}

// SendMany sends the messages of reqs (their Seq as set) as Send does, but
// together: those of one datagram are queued for the send queue at once,
// so they leave in as few sendmmsg calls as it allows (and, with
// Config.Bundle, the ones for one peer in as few bundles). A server that
// answers several requests at once (a cache node's batch of backend
// reads) sends its replies with it.
func (e *Endpoint) SendMany(reqs []Request) error {
	if e.closed.Load() {
		return ErrClosed
	}
	return e.sendMany(reqs)
}

// sendMany sends the requests: those of one datagram queued together for
// the send queue, the others as Send sends them.
func (e *Endpoint) sendMany(reqs []Request) error {
	size := 0
	for _, r := range reqs {
		size += wire.HeaderLen + len(r.Msg.Key) + len(r.Msg.Value) + wire.TagLen
	}
	var (
		dsts = make([]netip.AddrPort, 0, len(reqs))
		ends = make([]int, 0, len(reqs))
		buf  = make([]byte, 0, min(size, len(reqs)*e.cfg.Datagram))
	)
	for _, r := range reqs {
		if e.comb == nil || wire.Datagrams(r.Msg, e.cfg.Datagram) > 1 {
			if err := e.Send(r.Dst, r.Msg); err != nil {
				return err
			}
			continue
		}
		b, _, err := e.appendDatagram(buf, r.Dst, r.Msg, 0)
		if err != nil {
			return err
		}
		buf = b
		dsts, ends = append(dsts, r.Dst), append(ends, len(buf))
	}
	ds := make([][]byte, len(ends))
	for i, start := 0, 0; i < len(ends); start, i = ends[i], i+1 {
		ds[i] = buf[start:ends[i]]
	}
	for sent := 0; sent < len(ds); {
		n := e.comb.sendMany(dsts[sent:], ds[sent:])
		if n == 0 { // unaddressable by sendmmsg, or the queue is full
			if err := e.write(dsts[sent], ds[sent]); err != nil {
				return fmt.Errorf("cannot send to %s: %w", dsts[sent], err)
			}
			n = 1
		}
		sent += n
	}
	return nil
}

// fail sets every outcome to err.
func fail(reqs []Request, out []Reply, err error) {
	for i, r := range reqs {
		out[i] = Reply{Err: fmt.Errorf("cannot call %s at %s: %w", r.Msg.Op, r.Dst, err)}
	}
}

// batchRetransmit is the first retransmission of requests sent together:
// the latest of their peers' (firstRetransmit).
func (e *Endpoint) batchRetransmit(reqs []Request) time.Duration {
	d := e.cfg.Retransmit
	for i, r := range reqs {
		if i > 0 && r.Dst == reqs[i-1].Dst {
			continue
		}
		d = max(d, e.firstRetransmit(r.Dst))
	}
	return d
}
