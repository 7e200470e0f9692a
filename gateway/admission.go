package gateway

import (
	"context"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// admission bounds the commands running in the cluster at once
// (Config.MaxInFlight). A pipeline's GETs are admitted together, as many
// as the bound allows in one piece: admitted a few at a time, they went
// out as a few small requests each, where together their requests to a
// cache node share one datagram (transport bundles) and the connection
// wakes once for their replies. Waiters are served in arrival order, and
// one never holds a part of what it waits for, so pipelines cannot
// deadlock each other.
type admission struct {
	sem     *semaphore.Weighted
	limit   int
	running atomic.Int64 // commands admitted and not yet done, for the metric
}

func newAdmission(limit int) *admission {
	return &admission{sem: semaphore.NewWeighted(int64(limit)), limit: limit}
}

// acquire waits until n commands (at most the bound: the most that are
// admitted at once) may run, or ctx ends; it returns how many were
// admitted, 0 when ctx ended first. Room at once admits even when ctx has
// ended.
func (a *admission) acquire(ctx context.Context, n int) int {
	n = min(n, a.limit)
	if !a.sem.TryAcquire(int64(n)) && a.sem.Acquire(ctx, int64(n)) != nil {
		return 0
	}
	a.running.Add(int64(n))
	return n
}

// release ends n admitted commands.
// tryAcquire admits n commands if they fit now, without waiting.
func (a *admission) tryAcquire(n int) bool {
	if n > a.limit || !a.sem.TryAcquire(int64(n)) {
		return false
	}
	a.running.Add(int64(n))
	return true
}

func (a *admission) release(n int) {
	a.running.Add(-int64(n))
	a.sem.Release(int64(n))
}
