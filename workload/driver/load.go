package driver

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/placement/hashing"
	"github.com/distcache/distcache/workload"
)

// phase is one open-loop run of the workload.
type phase struct {
	name     string // "warmup", "probe" or "measure"
	mode     Mode
	stores   []Store          // the operations go through these
	clients  []*client.Client // whose Stats count them (nil: none)
	rate     float64          // offered operations per second
	duration time.Duration    // time bound
	count    uint64           // operation bound
	measure  bool             // record latencies and the timeline
	failure  *Failure         // injected into this phase (measure only)
	shiftAt  time.Duration    // when the hot set shifts (measure only; 0: never)
}

// phaseResult is what a phase did.
type phaseResult struct {
	start, end time.Time // first issue; last operation finished
	issued     uint64
	late       uint64 // issues that found every worker busy
	totals     tallyTotals
	hist       *histogram // nil unless measured
	timeline   []Point
	fail       *failureRun // nil without a failure
	shift      *shiftRun   // nil without a hot-set shift
	hostIdle   float64     // the host's idle CPU share (measure only; -1: unknown)
}

// seconds is the phase's length.
func (p *phaseResult) seconds() float64 { return p.end.Sub(p.start).Seconds() }

// tally is a phase's live counters, written by the workers and read by the
// monitor and the failure injector.
type tally struct {
	completed, reads, writes, errors, notFound atomic.Uint64
}

// tallyTotals is a snapshot of a tally.
type tallyTotals struct {
	completed, reads, writes, errors, notFound uint64
}

func (t *tally) load() tallyTotals {
	return tallyTotals{completed: t.completed.Load(), reads: t.reads.Load(), writes: t.writes.Load(),
		errors: t.errors.Load(), notFound: t.notFound.Load()}
}

// answered is the operations that got an answer (NotFound included).
func (t tallyTotals) answered() uint64 { return t.completed - t.errors }

// op is one operation the dispatcher issues: a key id (its Zipf rank
// mapped by the key permutation current at the issue) and its kind.
type op struct {
	id    uint64
	write bool
}

// opBound is the operations an open loop at perSec operations per second
// issues in d: one every 1/perSec from time 0, at least one.
func opBound(perSec float64, d time.Duration) uint64 {
	n := math.Ceil(perSec * d.Seconds())
	if !(n >= 1) {
		return 1
	}
	if n >= math.MaxInt64 {
		return math.MaxInt64
	}
	return uint64(n)
}

// runPhase offers ph's load open loop and waits for every operation issued
// to finish. It fails when ctx ends or the failure injection fails.
func (r *runner) runPhase(ctx context.Context, ph phase) (*phaseResult, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r.log.Info("phase starting", "mode", ph.mode, "phase", ph.name, "offered_rate", ph.rate,
		"duration", ph.duration, "max_ops", ph.count)
	var t tally
	ops := make(chan op)
	hists := make([]*histogram, r.cfg.Concurrency)
	var wg sync.WaitGroup
	for w := range r.cfg.Concurrency {
		cl := ph.stores[w%len(ph.stores)]
		if ph.measure {
			hists[w] = &histogram{}
		}
		h := hists[w]
		wg.Go(func() {
			for o := range ops {
				r.do(ctx, cl, ph.mode, o, &t, h)
			}
		})
	}
	cpu0, cpuOK := readCPUTimes()
	res := &phaseResult{start: time.Now()}
	mon := r.startMonitor(progressInfo{mode: ph.mode, phase: ph.name, total: ph.count, duration: ph.duration},
		res.start, &t, ph.clients, ph.measure)
	if ph.failure != nil {
		res.fail = r.startFailure(ctx, cancel, *ph.failure, res.start, &t)
	}
	if ph.shiftAt > 0 {
		res.shift = r.startShift(ph.shiftAt, res.start, &t, ph.clients)
	}
	res.issued, res.late = r.dispatch(ctx, ph, res.start, ops, res.shift)
	close(ops)
	wg.Wait()
	res.end = time.Now()
	cpu1, ok := readCPUTimes()
	res.hostIdle = idleShare(cpu0, cpu1, cpuOK && ok)
	res.fail.stop()
	res.shift.stop()
	res.timeline = mon.stop(res.end)
	res.totals = t.load()
	if ph.measure {
		res.hist = &histogram{}
		for _, h := range hists {
			res.hist.merge(h)
		}
	}
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	r.log.Info("phase done", "mode", ph.mode, "phase", ph.name, "seconds", res.seconds(), "issued", res.issued,
		"late", res.late, "completed", res.totals.completed, "errors", res.totals.errors)
	return res, nil
}

// dispatch issues ph's operations on schedule to the workers reading ops,
// until ph.count are issued, ph.duration has passed or ctx ends. An
// operation that finds every worker busy waits for one and is counted late;
// later operations keep their schedule (they catch up if they can). Before
// every issue it polls shift (nil: none), so that the operations issued
// from its time on map their ranks by the shifted permutation.
func (r *runner) dispatch(ctx context.Context, ph phase, start time.Time, ops chan<- op, shift *shiftRun) (issued, late uint64) {
	rng := rand.New(rand.NewPCG(r.cfg.Seed, hashing.Derive(r.cfg.Seed, "driver/ops/"+string(ph.mode)+"/"+ph.name)))
	deadline := start.Add(ph.duration)
	timer := time.NewTimer(ph.duration)
	defer timer.Stop()
	var next float64 // seconds after start at which the next operation is due
	for issued < ph.count {
		now := time.Now()
		if !now.Before(deadline) {
			return issued, late
		}
		if wait := time.Duration(next*float64(time.Second)) - now.Sub(start); wait > 0 {
			timer.Reset(min(wait, deadline.Sub(now)))
			select {
			case <-ctx.Done():
				return issued, late
			case <-timer.C:
			}
			continue
		}
		if shift.poll(now) {
			r.log.Info("hot set shifted", "mode", ph.mode, "at", now.Sub(start))
		}
		o := op{id: r.keys.id(r.zipf.Sample(rng)), write: r.cfg.WriteRatio > 0 && rng.Float64() < r.cfg.WriteRatio}
		select {
		case ops <- o:
		default:
			late++
			timer.Reset(deadline.Sub(now))
			select {
			case ops <- o:
			case <-ctx.Done():
				return issued, late
			case <-timer.C:
				return issued, late
			}
		}
		issued++
		if r.cfg.Poisson {
			next += rng.ExpFloat64() / ph.rate
		} else {
			next = float64(issued) / ph.rate
		}
	}
	return issued, late
}

// do runs one operation on cl and counts it in t (and h, if not nil).
func (r *runner) do(ctx context.Context, cl Store, mode Mode, o op, t *tally, h *histogram) {
	key := ModeKey(mode, workload.Key(o.id))
	begin := time.Now()
	var err error
	if o.write {
		err = r.put(ctx, cl, mode, key)
		t.writes.Add(1)
	} else {
		octx, cancel := context.WithTimeout(ctx, r.cfg.OpTimeout)
		_, err = cl.Get(octx, key)
		cancel()
		t.reads.Add(1)
	}
	if h != nil {
		h.record(time.Since(begin))
	}
	switch {
	case err == nil:
	case errors.Is(err, client.ErrNotFound):
		t.notFound.Add(1)
	default:
		t.errors.Add(1)
		r.log.Debug("operation failed", "mode", mode, "key", key, "write", o.write, "err", err)
	}
	t.completed.Add(1)
}

// put writes a fresh unique value of key through cl, with no other write of
// key in flight, and records the outcome in the ledger. It waits at most
// OpTimeout for the key's previous write to finish, then gives the write
// its own OpTimeout.
func (r *runner) put(ctx context.Context, cl Store, mode Mode, key string) error {
	v := value(mode, key, r.seq.Add(1), r.cfg.ValueSize)
	wctx, cancel := context.WithTimeout(ctx, r.cfg.OpTimeout)
	defer cancel()
	return r.ledger.write(wctx, key, v, func() error {
		octx, cancel := context.WithTimeout(ctx, r.cfg.OpTimeout)
		defer cancel()
		return cl.Put(octx, key, v)
	})
}

// parallel runs fn(ctx, i) for i in [0, n) on at most workers goroutines,
// starting at most limit calls per second (0: no limit), until every i is
// done or ctx ends, reporting progress as phase name; it returns how many
// calls returned.
func (r *runner) parallel(ctx context.Context, name string, n, workers int, limit float64,
	fn func(ctx context.Context, i int)) int {
	var t tally
	var next atomic.Int64
	start := time.Now()
	mon := r.startMonitor(progressInfo{phase: name, total: uint64(n)}, start, &t, nil, false)
	pace := rate.NewLimiter(rate.Inf, 1)
	if limit > 0 {
		pace = rate.NewLimiter(rate.Limit(limit), 1)
	}
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for pace.Wait(ctx) == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(ctx, i)
				t.completed.Add(1)
			}
		})
	}
	wg.Wait()
	mon.stop(time.Now())
	return int(t.completed.Load())
}
