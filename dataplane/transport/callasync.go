package transport

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Calls that do not wait (CallManyFunc). A goroutine blocked in CallMany
// costs two hand-offs per batch: the reader that receives the last reply
// wakes it, and it was started by another. With CallManyFunc nothing
// waits: the reader that delivers a batch's last reply runs the batch's
// callback itself, inline, so a cache node's misses are answered by the
// goroutine that received their shim's replies, in the same receive pass.
// The retransmissions and deadlines of every such batch share one timer
// per endpoint, armed for the earliest of them, instead of a timer and a
// goroutine each.

// asyncCalls are an endpoint's CallManyFunc batches in flight.
type asyncCalls struct {
	mu      sync.Mutex // guards batches, timer and due, and each batch's schedule
	batches map[*asyncBatch]struct{}
	timer   *time.Timer // fires at due; nil before the first batch
	due     time.Time   // when timer fires; zero while it is stopped
}

// asyncBatch is one CallManyFunc.
type asyncBatch struct {
	e     *Endpoint
	reqs  []Request
	calls []call
	wait  *batchWait // the replies' slots; wait.onDone ends the batch
	done  func([]Reply)
	ended atomic.Bool
	// moved is set when a window of any exchange moved on: the next timer
	// round moves the deadline on (CallUntil's progress).
	moved atomic.Bool

	// The schedule, guarded by asyncCalls.mu.
	deadline time.Time     // zero: none
	budget   time.Duration // what the calls may wait without progress
	interval time.Duration // the retransmit interval
	next     time.Time     // when the unanswered requests are sent again
}

// CallManyFunc is CallMany that does not wait: it sends the requests and
// returns, and done(out) is called once, with out[i] the outcome of
// reqs[i], when every request is answered — on the reader goroutine that
// received the last reply, inside its receive pass, so done must not
// block — or at deadline (none when zero), or when the endpoint closes,
// on the endpoint's timer. The requests are sent again after Retransmit,
// then after twice as long each time, as CallMany's are, and a window of
// any exchange moves the deadline on. reqs must not change until done is
// called. The returned stop ends the batch early: its requests are not
// sent again, and done is not called unless it was already.
func (e *Endpoint) CallManyFunc(deadline time.Time, reqs []Request, done func([]Reply)) (stop func()) {
	if len(reqs) == 0 {
		done(nil)
		return func() {}
	}
	if e.closed.Load() {
		out := make([]Reply, len(reqs))
		fail(reqs, out, ErrClosed)
		done(out)
		return func() {}
	}
	now := time.Now()
	a := &asyncBatch{e: e, reqs: reqs, wait: newBatchWait(len(reqs)), done: done,
		deadline: deadline, budget: deadline.Sub(now), interval: e.batchRetransmit(reqs)}
	a.wait.onDone = func() { a.end(nil) }
	a.calls = e.register(reqs, a.wait, a)
	e.async.add(a, now)
	if e.closed.Load() { // Close may have ended the batches before a joined them
		a.end(ErrClosed)
		return a.stop
	}
	if err := e.sendMany(reqs); err != nil {
		a.end(err)
	}
	return a.stop
}

// stop ends a without calling its done, unless it ended already.
func (a *asyncBatch) stop() {
	if a.ended.Swap(true) {
		return
	}
	a.e.unregister(a.reqs)
	a.e.async.remove(a)
}

// end ends a once: its calls leave the endpoint and the timer, and done
// gets every reply that came, err for the others.
func (a *asyncBatch) end(err error) {
	if a.ended.Swap(true) {
		return
	}
	a.e.unregister(a.reqs)
	a.e.async.remove(a)
	out := make([]Reply, len(a.reqs))
	a.wait.collect(a.reqs, err, out)
	a.done(out)
}

// add schedules a's first retransmission and arms the timer for it if it
// is the earliest.
func (ac *asyncCalls) add(a *asyncBatch, now time.Time) {
	ac.mu.Lock()
	defer ac.mu.Unlock()
	if ac.batches == nil {
		ac.batches = map[*asyncBatch]struct{}{}
	}
	ac.batches[a] = struct{}{}
	a.next = now.Add(a.interval)
	ac.armLocked(a.when(), now, a.e)
}

// remove forgets a. The timer stays armed while other batches wait (a
// round with nothing due costs a scan) and stops with the last one: at a
// light load every batch is answered before its first retransmission,
// and a timer left armed would wake the process once more per batch.
func (ac *asyncCalls) remove(a *asyncBatch) {
	ac.mu.Lock()
	delete(ac.batches, a)
	if len(ac.batches) == 0 && ac.timer != nil && !ac.due.IsZero() {
		ac.timer.Stop()
		ac.due = time.Time{}
	}
	ac.mu.Unlock()
}

// when is a's next event: its retransmission, or its deadline if sooner.
func (a *asyncBatch) when() time.Time {
	if !a.deadline.IsZero() && a.deadline.Before(a.next) {
		return a.deadline
	}
	return a.next
}

// armLocked makes the timer fire by at; ac.mu is held.
func (ac *asyncCalls) armLocked(at, now time.Time, e *Endpoint) {
	if !ac.due.IsZero() && !at.Before(ac.due) {
		return
	}
	ac.due = at
	if ac.timer == nil {
		ac.timer = time.AfterFunc(at.Sub(now), func() { ac.fire(e) })
		return
	}
	ac.timer.Reset(at.Sub(now))
}

// fire is a timer round: the batches past their deadline end with
// context.DeadlineExceeded, those due send their unanswered requests
// again (or ask for the rest of a reply) with the interval doubled, and
// the timer is armed for the next event.
func (ac *asyncCalls) fire(e *Endpoint) {
	now := time.Now()
	var expired, due []*asyncBatch
	ac.mu.Lock()
	ac.due = time.Time{}
	var next time.Time
	for a := range ac.batches {
		if a.moved.Swap(false) && !a.deadline.IsZero() {
			a.deadline = now.Add(a.budget)
		}
		if !a.deadline.IsZero() && !now.Before(a.deadline) {
			expired = append(expired, a)
			continue
		}
		if !now.Before(a.next) {
			a.interval = nextRetransmit(a.interval, e.cfg.MaxRetransmit)
			a.next = now.Add(a.interval)
			due = append(due, a)
		}
		if w := a.when(); next.IsZero() || w.Before(next) {
			next = w
		}
	}
	if !next.IsZero() {
		ac.armLocked(next, now, e)
	}
	ac.mu.Unlock()
	for _, a := range expired {
		a.end(context.DeadlineExceeded)
	}
	for _, a := range due {
		if e.closed.Load() {
			a.end(ErrClosed)
			continue
		}
		if err := e.resendUnanswered(a.reqs, a.calls, a.wait, now); err != nil {
			a.end(err)
		}
	}
}

// closeAll ends every batch with ErrClosed (Endpoint.Close).
func (ac *asyncCalls) closeAll() {
	ac.mu.Lock()
	batches := make([]*asyncBatch, 0, len(ac.batches))
	for a := range ac.batches {
		batches = append(batches, a)
	}
	if ac.timer != nil {
		ac.timer.Stop()
	}
	ac.mu.Unlock()
	for _, a := range batches {
		a.end(ErrClosed)
	}
}
