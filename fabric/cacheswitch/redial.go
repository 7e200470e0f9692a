package cacheswitch

import (
	"context"
	"log/slog"
	"time"
)

// Redialer runs a runner's sessions with its device one after another
// (Runner, clientleaf.Runner): it runs a session to its end, reports how
// it ended, waits, and dials again.
type Redialer struct {
	// Device names the device in logs: "switch", "client leaf".
	Device string
	// Retry is the wait before dialing again after a session ends.
	Retry time.Duration
	// Leadership, when set, holds each session back until the runner
	// is its fleet's leader.
	Leadership *Leadership
	// Session runs one session to its end.
	Session func(ctx context.Context) error
	// Ended is told the error each session ended with.
	Ended  func(err error)
	Logger *slog.Logger
}

// Run runs sessions until ctx ends.
func (d Redialer) Run(ctx context.Context) {
	for ctx.Err() == nil {
		if d.Leadership != nil && d.Leadership.Await(ctx) != nil {
			return
		}
		err := d.Session(ctx)
		d.Ended(err)
		if ctx.Err() != nil {
			return
		}
		d.Logger.Warn(d.Device+" session ended; dialing again", "err", err, "after", d.Retry)
		select {
		case <-ctx.Done():
			return
		case <-time.After(d.Retry):
		}
	}
}
