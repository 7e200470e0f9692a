// Package periodic runs a function on a fixed period until its context
// ends or the function says to stop: the loop behind every background
// refresh (peer addresses, data-plane keys, memory guards).
package periodic

import (
	"context"
	"time"
)

// Run calls fn every interval, the first time one interval from now, until
// ctx ends or fn returns false. It returns when it stops.
func Run(ctx context.Context, interval time.Duration, fn func(context.Context) bool) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if ctx.Err() != nil || !fn(ctx) { // a tick and the end both ready: end
			return
		}
	}
}
