// Package capacity emulates a server's limited capacity, as the DistCache
// paper's testbed does (Liu et al., FAST '19, §6.1: "we allocate the ...
// throughput to the emulated storage servers equally with rate limiting ...
// match the throughput of each emulated switch to the aggregated throughput
// of the emulated storage servers in a rack").
//
// A Limiter hands out work units at a fixed rate. A storage shim or a cache
// node takes the units a request costs before it answers it; the cost model
// is the simulator's (package sim, Config.CoherenceCost = 1):
//
//   - a storage shim spends 1 unit per GET, FETCH, PUT or DEL it serves, and
//     1 more per cached copy a write invalidates and then updates;
//   - a cache node spends 1 unit per read it serves from its copy (a hit)
//     and 1 per INVALIDATE and 1 per UPDATE of a copy it holds; a miss it
//     forwards costs it nothing (a switch forwards at line rate).
//
// The rate is set far below what the machine can do, so a whole cluster
// runs as local processes on a few cores and the bottleneck is the emulated
// capacity, not the CPU. Take blocks on purpose: a cache node calls it on
// a reader goroutine of its UDP socket, so while the emulated switch is busy
// the requests that wait for it queue in the kernel's socket buffer, like
// packets waiting for a busy switch (it tries TryTake first, and sends the
// replies it has finished before it waits). A storage shim queues its
// requests on their own goroutines instead and calls TakeBy with a
// deadline: its reader keeps reading the acknowledgements of the shim's own
// coherence calls, and a read that could only be served after its client
// has given up is shed rather than served late — a busy server that kept
// serving abandoned requests would never catch up (a retransmission
// storm). Its writes use TakeAhead, a queue of higher priority on the same
// capacity.
//
// Every unit taken is counted (Used), also by an unlimited Limiter, so the
// work a process did can be compared with the model whatever the rate.
package capacity

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// burstSeconds is how much work, in seconds of the rate, a Limiter admits
// at once after it has been idle: 10 ms. The burst only bounds how far an
// idle emulated server can run ahead: over any interval of length T it does
// at most burst + rate·T units. Under saturation, which is what the
// emulation is for, the bucket is empty and every unit waits for the rate
// whatever the burst. A small burst keeps the emulated capacity faithful on
// the short windows the benchmark measures loads over; it is deliberately
// not tied to the transport's receive batch (32 datagrams): a batch of
// requests that arrives at an idle server at once is served at the server's
// rate, as a real server of that capacity would serve it, and at low rates
// a burst of 32 units would be hundreds of milliseconds of free work.
const burstSeconds = 0.01

// clock is the time source of a Limiter: the wall clock, or a fake one in
// tests.
type clock interface {
	now() time.Time
	// sleep waits for d, or until done is closed.
	sleep(d time.Duration, done <-chan struct{})
}

// wallClock is the real clock.
type wallClock struct{}

func (wallClock) now() time.Time { return time.Now() }

func (wallClock) sleep(d time.Duration, done <-chan struct{}) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-done:
	}
}

// Limiter is an emulated capacity: Take blocks until n work units are
// available at Rate units per second; it counts every unit taken. It is
// safe for concurrent use.
//
// A nil *Limiter is valid and unlimited: Take never blocks and counts
// nothing, Used and Rate are 0. The zero Limiter is unlimited too, but
// counts. Use New.
type Limiter struct {
	rate  float64
	burst int
	lim   *rate.Limiter // nil when unlimited; has its own lock
	clk   clock
	used  atomic.Uint64

	closeOnce sync.Once
	done      chan struct{} // closed by Close; nil in the zero Limiter
	closed    atomic.Bool

	aheadMu sync.Mutex // guards aheadFree
	// aheadFree is when the units TakeAhead has handed out so far are
	// all due: the next TakeAhead waits until then.
	aheadFree time.Time
}

// New returns a Limiter of rate work units per second, with a burst of
// 10 ms of work (at least 1 unit). A rate <= 0 (or NaN, or +Inf) is
// unlimited: Take never blocks, but units are still counted.
func New(rate float64) *Limiter { return newLimiter(rate, wallClock{}) }

func newLimiter(r float64, clk clock) *Limiter {
	l := &Limiter{clk: clk, done: make(chan struct{})}
	if r > 0 && !math.IsInf(r, 1) { // false for NaN
		l.rate = r
		l.burst = Burst(r)
		l.lim = rate.NewLimiter(rate.Limit(r), l.burst)
	}
	return l
}

// Burst is the burst of a Limiter of rate r > 0: the units it admits at
// once when idle, max(1, ⌈r/100⌉).
func Burst(r float64) int {
	b := math.Ceil(r * burstSeconds)
	if !(b >= 1) { // also NaN
		return 1
	}
	if b > math.MaxInt32 {
		return math.MaxInt32
	}
	return int(b)
}

// Take blocks until n work units are available, takes them and counts
// them. n <= 0 does nothing. More than a burst of units is taken a burst at
// a time. After Close, Take no longer waits (a server that shuts down
// drains at once) but still counts. It does not allocate unless it has to
// wait.
func (l *Limiter) Take(n int) {
	if l == nil || n <= 0 {
		return
	}
	if l.lim != nil {
		l.wait(n)
	}
	l.used.Add(uint64(n))
}

// TakeAhead takes n work units ahead of the callers of Take and TakeBy: it
// waits only for the units earlier TakeAhead calls took, at the rate, and
// the units it takes are owed by the bucket, so the callers that reserve
// after it wait for them. It is a queue of higher priority on the same
// capacity: over any long interval the units taken, by every method
// together, still follow the rate; in the short run the callers already
// waiting keep the times they were promised. A storage shim takes its
// writes' units this way: a write holds its key's lock while its readers
// wait for it, so the reads queued ahead of it should not make it wait
// too. Like Take it counts the units, and after Close it no longer waits.
func (l *Limiter) TakeAhead(n int) {
	if l == nil || n <= 0 {
		return
	}
	if l.lim != nil && !l.closed.Load() {
		now := l.clk.now()
		l.aheadMu.Lock()
		start := now
		if l.aheadFree.After(start) {
			start = l.aheadFree
		}
		l.aheadFree = start.Add(time.Duration(float64(n) / l.rate * float64(time.Second)))
		l.aheadMu.Unlock()
		for left := n; left > 0; left -= l.burst {
			l.lim.ReserveN(now, min(left, l.burst)) // owed: later callers wait for it
		}
		if d := start.Sub(now); d > 0 {
			l.clk.sleep(d, l.done)
		}
	}
	l.used.Add(uint64(n))
}

// TryTake takes n work units and reports true if they are available now;
// otherwise it takes nothing and reports false at once. A caller that
// must not hold finished work while it waits (a reader with replies
// queued) tries first, hands its finished work on, and then Takes. n <= 0,
// an unlimited Limiter and a closed one always succeed; successes are
// counted as Take's. It does not allocate.
func (l *Limiter) TryTake(n int) bool {
	if l == nil || n <= 0 {
		return true
	}
	if l.lim != nil && !l.closed.Load() && (n > l.burst || !l.lim.AllowN(l.clk.now(), n)) {
		return false
	}
	l.used.Add(uint64(n))
	return true
}

// wait waits for n units, a burst at a time.
func (l *Limiter) wait(n int) {
	for n > 0 {
		c := min(n, l.burst)
		n -= c
		now := l.clk.now()
		if l.lim.AllowN(now, c) { // no allocation: the common unsaturated case
			continue
		}
		if l.closed.Load() {
			return
		}
		// c <= burst, so the reservation is always granted; it tells
		// how long until the c units are there (the reservations of
		// concurrent callers queue up behind one another).
		r := l.lim.ReserveN(now, c)
		if d := r.DelayFrom(now); d > 0 {
			l.clk.sleep(d, l.done)
		}
	}
}

// TakeBy takes n work units if they are available by deadline: it waits
// for them and reports true. When the units already promised to earlier
// callers leave none for this one before deadline, it takes nothing,
// returns false at once and leaves the queue as it was — a server sheds a
// request it could only serve after its client has given up. n <= 0, an
// unlimited Limiter and a closed one always succeed at once; successes are
// counted as Take's. Like Take, it does not allocate unless it has to wait.
func (l *Limiter) TakeBy(n int, deadline time.Time) bool {
	if l == nil || n <= 0 {
		return true
	}
	if l.lim != nil && !l.closed.Load() {
		now := l.clk.now()
		if n <= l.burst && l.lim.AllowN(now, n) { // no allocation: the common unsaturated case, as in Take
			l.used.Add(uint64(n))
			return true
		}
		var rs []*rate.Reservation
		var wait time.Duration
		for left := n; left > 0; left -= l.burst {
			r := l.lim.ReserveN(now, min(left, l.burst))
			rs = append(rs, r)
			wait = r.DelayFrom(now)
		}
		if now.Add(wait).After(deadline) {
			for i := len(rs) - 1; i >= 0; i-- {
				rs[i].CancelAt(now)
			}
			return false
		}
		if wait > 0 {
			l.clk.sleep(wait, l.done)
		}
	}
	l.used.Add(uint64(n))
	return true
}

// Used is the number of work units taken so far.
func (l *Limiter) Used() uint64 {
	if l == nil {
		return 0
	}
	return l.used.Load()
}

// Rate is the emulated capacity in work units per second; 0 means
// unlimited.
func (l *Limiter) Rate() float64 {
	if l == nil {
		return 0
	}
	return l.rate
}

// Limited reports whether Take may block.
func (l *Limiter) Limited() bool { return l != nil && l.lim != nil }

// Close ends every wait, present and future: Take returns at once from
// then on. Call it when the server stops, so that readers blocked in Take
// do not hold up the shutdown. Close is idempotent.
func (l *Limiter) Close() {
	if l == nil || l.done == nil {
		return
	}
	l.closeOnce.Do(func() {
		l.closed.Store(true)
		close(l.done)
	})
}
