// Package workpool runs short tasks on goroutines that outlive them.
//
// A data-plane process that started a goroutine per request (a cache
// node's backend read on a miss, §4.3's forwarding of a GET to its storage
// server) paid for it twice: the goroutine's start, and the growth of its
// small initial stack, which the request's call chain (transport, wire,
// metrics) grows again every time. In a CPU profile of cache nodes
// forwarding misses, that growth (runtime.morestack and copystack) and
// the starts took a fifth of the nodes' CPU. A worker of a Pool keeps its
// grown stack from one task to the next.
//
// Go hands a task to an idle worker if one is waiting and otherwise starts
// a new worker, so a task never waits behind another: the pool is as
// concurrent as goroutines would be. A worker that finishes a task while
// MaxIdle others already wait exits instead of waiting, which bounds what
// a burst leaves behind. Close waits for every task to end.
package workpool

import (
	"sync"
	"sync/atomic"
)

// DefaultMaxIdle is how many idle workers a Pool keeps by default.
const DefaultMaxIdle = 256

// Pool runs tasks on reusable goroutines. The zero value is not usable;
// call New.
type Pool struct {
	maxIdle int64
	tasks   chan func() // unbuffered: a send succeeds only into an idle worker
	done    chan struct{}
	idle    atomic.Int64 // workers waiting on tasks (or about to)
	alive   atomic.Int64 // workers started and not ended
	started atomic.Uint64

	mu     sync.Mutex // guards closed and wg.Add against Close's wg.Wait
	closed bool
	wg     sync.WaitGroup
}

// New returns a pool that keeps at most maxIdle idle workers
// (DefaultMaxIdle when maxIdle <= 0).
func New(maxIdle int) *Pool {
	if maxIdle <= 0 {
		maxIdle = DefaultMaxIdle
	}
	return &Pool{maxIdle: int64(maxIdle), tasks: make(chan func()), done: make(chan struct{})}
}

// Go runs f on a worker, and reports false (not running it) once Close has
// begun.
func (p *Pool) Go(f func()) bool {
	select {
	case p.tasks <- f:
		return true
	default:
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.wg.Add(1)
	p.alive.Add(1)
	p.started.Add(1)
	go p.work(f)
	return true
}

// work runs f, then the tasks handed to it while it waits, until the pool
// closes or enough other workers wait already.
func (p *Pool) work(f func()) {
	defer p.wg.Done()
	defer p.alive.Add(-1)
	for {
		f()
		if !p.becomeIdle() {
			return
		}
		select {
		case f = <-p.tasks:
			p.idle.Add(-1)
		case <-p.done:
			p.idle.Add(-1)
			return
		}
	}
}

// becomeIdle counts the calling worker idle unless MaxIdle others are, so
// that Idle never counts more than MaxIdle, even for a moment.
func (p *Pool) becomeIdle() bool {
	for {
		n := p.idle.Load()
		if n >= p.maxIdle {
			return false
		}
		if p.idle.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// Close makes Go refuse new tasks and waits until every task has ended.
// A task handed to an idle worker before Close still runs.
func (p *Pool) Close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.done)
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// Stats are a pool's counters.
type Stats struct {
	Started uint64 // workers ever started
	Alive   int64  // workers running a task or waiting for one
	Idle    int64  // workers waiting for a task
}

// Stats returns the pool's counters.
func (p *Pool) Stats() Stats {
	return Stats{Started: p.started.Load(), Alive: p.alive.Load(), Idle: p.idle.Load()}
}
