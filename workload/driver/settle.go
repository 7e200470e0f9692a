package driver

import (
	"context"
	"fmt"
	"time"
)

// Settling: an emulated server that was overloaded still holds a queue of
// requests whose clients have given up. Before a mode's first phase and
// before the read-back, the driver waits until every member with a capacity
// works below settleLoad of it, so that one phase's backlog does not count
// against the next: at most settleTimeout, polling Cluster.Work every
// settlePoll.
const (
	settleLoad    = 0.1
	settlePoll    = 200 * time.Millisecond
	settleTimeout = 15 * time.Second
)

// settle waits until the cluster is (nearly) idle, or settleTimeout has
// passed (it then logs and goes on); it fails only when Work fails or ctx
// ends. Without emulated capacities there is nothing to wait for.
func (r *runner) settle(ctx context.Context, before string) error {
	if !r.emulated {
		return nil
	}
	start := time.Now()
	prev, err := r.cluster.Work(ctx)
	if err != nil {
		return fmt.Errorf("cannot read the cluster's work: %w", err)
	}
	prevAt := time.Now()
	t := time.NewTimer(settlePoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("cannot wait for the cluster to settle: %w", ctx.Err())
		case <-t.C:
		}
		cur, err := r.cluster.Work(ctx)
		if err != nil {
			return fmt.Errorf("cannot read the cluster's work: %w", err)
		}
		now := time.Now()
		nodes, shards, _ := loadWindow(prev, cur, now.Sub(prevAt), r.watcher.Current().Map())
		name, u := busiest(nodes, shards)
		switch {
		case u < settleLoad:
			r.log.Debug("cluster settled", "before", before, "waited", now.Sub(start))
			return nil
		case now.Sub(start) >= settleTimeout:
			r.log.Warn("cluster still busy; going on", "before", before, "busiest", name, "utilization", u,
				"waited", now.Sub(start))
			return nil
		}
		prev, prevAt = cur, now
		t.Reset(settlePoll)
	}
}
