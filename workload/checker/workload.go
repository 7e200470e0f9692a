package checker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/workload/history"
)

// controlID is the history's client id of the preload and the read-back;
// worker w is w+1.
const controlID = 0

// retryPause is the pause between a failed preload write or final read
// and its next attempt.
const retryPause = 100 * time.Millisecond

// counters are the run's Counts as they grow.
type counters struct {
	ops, gets, hits, notFound, failedReads                  atomic.Int64
	puts, deletes, acked, refused, unknown, timedOut, preld atomic.Int64
}

func (n *counters) snapshot() Counts {
	return Counts{
		Operations: n.ops.Load(), Gets: n.gets.Load(), Hits: n.hits.Load(), NotFound: n.notFound.Load(), FailedReads: n.failedReads.Load(),
		Puts: n.puts.Load(), Deletes: n.deletes.Load(), Acknowledged: n.acked.Load(), Refused: n.refused.Load(),
		Unknown: n.unknown.Load(), TimedOut: n.timedOut.Load(), Preload: n.preld.Load(),
	}
}

// writeOutcome is what became of a write.
type writeOutcome int

const (
	acknowledged writeOutcome = iota
	refused                   // coherence timeout: not applied
	unknown                   // possibly applied
)

// write runs op (a put or delete, without its times) on cl and records it
// unless it was refused.
func (c *Checker) write(ctx context.Context, cl *client.Client, op history.Operation) (writeOutcome, error) {
	octx, cancel := context.WithTimeout(ctx, c.cfg.OpTimeout)
	defer cancel()
	op.Call = c.rec.Now()
	var err error
	if op.Kind == history.Put {
		err = cl.Put(octx, op.Key, []byte(op.Value))
	} else {
		err = cl.Delete(octx, op.Key)
	}
	op.Return = c.rec.Now()
	res := acknowledged
	switch {
	case err == nil:
	case errors.Is(err, client.ErrCoherence):
		return refused, err // the shim guarantees it wrote nothing
	default:
		op.Return, res = history.Unknown, unknown
	}
	c.rec.Add(op)
	return res, err
}

// read runs a get of key on cl and records it unless it failed.
func (c *Checker) read(ctx context.Context, cl *client.Client, clientID int, key string) (client.Result, history.Observed, error) {
	octx, cancel := context.WithTimeout(ctx, c.cfg.OpTimeout)
	defer cancel()
	op := history.Operation{Client: clientID, Kind: history.Get, Key: key, Call: c.rec.Now()}
	res, err := cl.GetResult(octx, key)
	op.Return = c.rec.Now()
	switch {
	case err == nil:
		op.Value, op.Found = string(res.Value), true
	case errors.Is(err, client.ErrNotFound):
	default:
		return res, history.Observed{}, err // observed nothing
	}
	c.rec.Add(op)
	return res, history.Observed{Value: op.Value, Found: op.Found}, nil
}

// preload writes every key once, each write sent again until one is
// acknowledged, within ReadBackTimeout.
func (c *Checker) preload(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.ReadBackTimeout)
	defer cancel()
	for id, key := range c.keys {
		for attempt := 0; ; attempt++ {
			c.count.preld.Add(1)
			op := history.Operation{Client: controlID, Kind: history.Put, Key: key, Value: fmt.Sprintf("%s-init%d-%d", c.runID, id, attempt)}
			res, err := c.write(ctx, c.control, op)
			if res == acknowledged {
				break
			}
			c.log.Warn("preload write not acknowledged", "key", key, "attempt", attempt, "err", err)
			if perr := pause(ctx); perr != nil {
				return fmt.Errorf("cannot preload %s: %w (last: %w)", key, perr, err)
			}
		}
	}
	return nil
}

// pause waits retryPause or until ctx ends.
func pause(ctx context.Context) error {
	t := time.NewTimer(retryPause)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// work runs the timed workload and returns how long it ran.
func (c *Checker) work(ctx context.Context) time.Duration {
	start := time.Now()
	// Operations in flight at the deadline finish (within OpTimeout):
	// only new ones stop.
	deadline := start.Add(c.cfg.Duration)
	if c.cfg.Ready != nil {
		c.cfg.Ready()
	}
	c.log.Info("workload started", "keys", c.cfg.Keys, "workers", c.cfg.Workers, "clients", c.cfg.Clients, "duration", c.cfg.Duration, "max_ops", c.cfg.MaxOps)
	limit := rate.NewLimiter(rate.Inf, 1)
	if c.cfg.Rate > 0 {
		limit = rate.NewLimiter(rate.Limit(c.cfg.Rate), c.cfg.Workers)
	}
	var wg sync.WaitGroup
	for w := range c.cfg.Workers {
		wg.Go(func() { c.worker(ctx, w, deadline, limit) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	c.progress(Working, 0)
	for {
		select {
		case <-done:
			return time.Since(start)
		case <-tick.C:
			c.progress(Working, time.Since(start))
		}
	}
}

// worker runs operations one at a time, as limit lets it, until the
// deadline, the operation bound, EndWorkload or the end of ctx.
func (c *Checker) worker(ctx context.Context, w int, deadline time.Time, limit *rate.Limiter) {
	rng := rand.New(rand.NewPCG(c.cfg.Seed, uint64(w)))
	cl := c.clients[w%len(c.clients)]
	id := w + 1
	for n := 0; limit.Wait(ctx) == nil && !c.ended.Load() && time.Now().Before(deadline) && c.ops.Add(1) <= c.cfg.MaxOps; n++ {
		c.count.ops.Add(1)
		key := c.keys[c.zipf.Sample(rng)]
		switch r := rng.Float64(); {
		case r < c.cfg.WriteRatio*c.cfg.DeleteShare:
			c.count.deletes.Add(1)
			c.countWrite(c.write(ctx, cl, history.Operation{Client: id, Kind: history.Delete, Key: key}))
		case r < c.cfg.WriteRatio:
			c.count.puts.Add(1)
			op := history.Operation{Client: id, Kind: history.Put, Key: key, Value: fmt.Sprintf("%s-w%d-%d", c.runID, w, n)}
			c.countWrite(c.write(ctx, cl, op))
		default:
			c.count.gets.Add(1)
			res, obs, err := c.read(ctx, cl, id, key)
			switch {
			case err != nil:
				c.count.failedReads.Add(1)
				// When and why, to set against the faults of the run.
				c.log.Warn("read failed", "key", key, "err", err)
			case !obs.Found:
				c.count.notFound.Add(1)
			case res.Hit:
				c.count.hits.Add(1)
			}
		}
	}
}

func (c *Checker) countWrite(res writeOutcome, err error) {
	switch res {
	case acknowledged:
		c.count.acked.Add(1)
	case refused:
		c.count.refused.Add(1)
	default:
		c.count.unknown.Add(1)
		c.log.Warn("write of unknown outcome", "err", err)
		if errors.Is(err, client.ErrOutcomeUnknown) {
			c.count.timedOut.Add(1)
		}
	}
}
