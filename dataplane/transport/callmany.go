package transport

import (
	"context"
	"fmt"
	"net/netip"
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

// batchWait counts the replies a CallMany waits for.
type batchWait struct {
	left atomic.Int32
	done chan struct{} // buffered 1: signalled when left reaches 0
}

// answered counts one reply delivered.
func (b *batchWait) answered() {
	if b.left.Add(-1) == 0 {
		b.done <- struct{}{}
	}
}

// CallMany is CallUntil for several requests at once, for a caller with
// many to make (a gateway's pipeline). The requests leave together — in
// as few sendmmsg calls as the send queue allows, instead of a system call
// or a hand-off each — and the caller wakes once: when every request is
// answered, at deadline (none when zero) or when ctx ends. A request still
// unanswered after Retransmit is sent again (or the rest of its reply
// asked for), then after twice as long each time, as Call's are. out[i]
// is the outcome of reqs[i]; out must be as long as reqs.
func (e *Endpoint) CallMany(ctx context.Context, deadline time.Time, reqs []Request, out []Reply) {
	if e.closed.Load() {
		fail(reqs, out, ErrClosed)
		return
	}
	b := &batchWait{done: make(chan struct{}, 1)}
	b.left.Store(int32(len(reqs)))
	calls := make([]call, len(reqs))
	e.mu.Lock()
	for i, r := range reqs {
		r.Msg.Seq = e.NextSeq()
		calls[i] = call{dst: unmapped(r.Dst), op: r.Msg.Op.Reply(), reply: make(chan wire.Message, 1), batch: b}
		e.calls[r.Msg.Seq] = &calls[i]
	}
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		for _, r := range reqs {
			delete(e.calls, r.Msg.Seq)
		}
		e.mu.Unlock()
	}()
	err := e.waitMany(ctx, deadline, reqs, calls, b)
	for i := range calls {
		select {
		case r := <-calls[i].reply:
			out[i] = Reply{Msg: r}
		default:
			out[i] = Reply{Err: fmt.Errorf("cannot call %s at %s: %w", reqs[i].Msg.Op, reqs[i].Dst, err)}
		}
	}
}

// waitMany sends the requests of CallMany and waits for their replies; it
// returns why it stopped waiting before every one arrived (nil when it did
// not).
func (e *Endpoint) waitMany(ctx context.Context, deadline time.Time, reqs []Request, calls []call, b *batchWait) error {
	if err := e.sendMany(reqs); err != nil {
		return err
	}
	interval := e.cfg.Retransmit
	t := time.NewTimer(wait(interval, deadline))
	defer t.Stop()
	for {
		select {
		case <-b.done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if e.closed.Load() {
			return ErrClosed
		}
		now := time.Now()
		if !deadline.IsZero() && !now.Before(deadline) {
			return context.DeadlineExceeded
		}
		interval = nextRetransmit(interval, e.cfg.MaxRetransmit)
		t.Reset(wait(interval, deadline))
		for i := range calls {
			if len(calls[i].reply) != 0 {
				continue // answered
			}
			e.stats.retransmits.Add(1)
			if err := e.resend(&calls[i], reqs[i].Dst, reqs[i].Msg, now); err != nil {
				return err
			}
		}
	}
}

// sendMany sends the requests: those of one datagram queued together for
// the send queue, the others as Send sends them.
func (e *Endpoint) sendMany(reqs []Request) error {
	var (
		dsts []netip.AddrPort
		buf  []byte
		ends []int
	)
	for _, r := range reqs {
		if e.comb == nil || wire.Datagrams(r.Msg, e.cfg.Datagram) > 1 {
			if err := e.Send(r.Dst, r.Msg); err != nil {
				return err
			}
			continue
		}
		b, _, err := e.appendDatagram(buf, r.Msg, 0)
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
