package standalone

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distcache/distcache/standalone/plan"
)

// spread runs check for every process of procs once per period, each at its
// own offset within the period, as Prometheus spreads its scrape targets,
// until ctx ends. Asking every process at the same instant would make each
// of them render its metrics at once: on a small machine running the whole
// cluster that stalls the data plane for tens of milliseconds every period.
// A process whose previous check has not returned is skipped this time, so
// a hung process does not pile up checks.
func spread(ctx context.Context, period time.Duration, procs []plan.Process, check func(context.Context, plan.Process)) {
	if len(procs) == 0 {
		<-ctx.Done()
		return
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	busy := make([]atomic.Bool, len(procs)) // busy[i]: procs[i]'s check is running
	t := time.NewTicker(max(period/time.Duration(len(procs)), time.Millisecond))
	defer t.Stop()
	for i := 0; ; i = (i + 1) % len(procs) {
		if busy[i].CompareAndSwap(false, true) {
			wg.Go(func() {
				defer busy[i].Store(false)
				check(ctx, procs[i])
			})
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
