package main

import (
	"context"
	"fmt"
	"io"
	"runtime/metrics"
	"time"

	"github.com/distcache/distcache/internal/periodic"
)

// heapMetric is the bytes of live and not yet swept heap objects.
const heapMetric = "/memory/classes/heap/objects:bytes"

// guardMemory calls exit (which ends the process) when its heap grows past
// limit bytes (0: no limit), after saying why on w. The search of a
// linearizability check can need memory exponential in the concurrency of
// a history (writes whose outcome is unknown are concurrent with
// everything after them); a check that cannot be decided within the limit
// ends as undecided instead of exhausting the machine. The guard stops
// when ctx ends.
func guardMemory(ctx context.Context, limit uint64, w io.Writer, exit func()) {
	if limit == 0 {
		return
	}
	sample := []metrics.Sample{{Name: heapMetric}}
	periodic.Run(ctx, 250*time.Millisecond, func(context.Context) bool {
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return false
		}
		if used := sample[0].Value.Uint64(); used > limit {
			fmt.Fprintf(w, "check: the heap reached %d MiB, over --max-memory (%d MiB): the history is too hard to check within it; giving up undecided\n",
				used>>20, limit>>20)
			exit()
			return false
		}
		return true
	})
}
