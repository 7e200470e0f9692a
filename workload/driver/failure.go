package driver

import (
	"context"
	"fmt"
	"math"
	"time"
)

// failureRun injects a Failure into a measured phase: Kill at At after the
// phase started, Restart at At + DownFor. Its goroutine owns every field but
// stopc and done until done is closed; the runner reads them afterwards.
type failureRun struct {
	f     Failure
	stopc chan struct{} // closed when the phase's window ends
	done  chan struct{} // closed when the goroutine has returned

	killed, restarted     bool
	workAt                time.Time // when workAtKill was read (the scrape's midpoint), just before the kill
	answeredAtWork        uint64    // the phase's answered operations at workAt
	killedAt, restartedAt time.Time
	workAtKill            []Work
	atKill, atRestart     tallyTotals // the phase's counters then
}

// startFailure starts injecting f into the phase that started at start; a
// failed Cluster call cancels the phase with the error as the cause.
func (r *runner) startFailure(ctx context.Context, cancel context.CancelCauseFunc, f Failure, start time.Time, t *tally) *failureRun {
	fr := &failureRun{f: f, stopc: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(fr.done)
		if !fr.sleepUntil(ctx, start.Add(f.At)) {
			return
		}
		var err error
		before, t0 := t.load(), time.Now()
		if fr.workAtKill, err = r.cluster.Work(ctx); err != nil {
			cancel(fmt.Errorf("cannot read the cluster's work before killing %s: %w", f.Member, err))
			return
		}
		fr.atKill, fr.killedAt = t.load(), time.Now()
		// Each process's work was read at some moment of the scrape, which
		// takes a while on a loaded machine: take its midpoint, and the
		// operations answered by then interpolated, so that the capacity
		// window's rate and loads cover the same time.
		fr.workAt = t0.Add(fr.killedAt.Sub(t0) / 2)
		fr.answeredAtWork = (before.answered() + fr.atKill.answered()) / 2
		if err := r.cluster.Kill(ctx, f.Member); err != nil {
			cancel(fmt.Errorf("cannot kill cache node %s: %w", f.Member, err))
			return
		}
		fr.killed = true
		r.pendingRestart = f.Member
		r.log.Info("killed cache node", "member", f.Member, "at", fr.killedAt.Sub(start))
		if !fr.sleepUntil(ctx, start.Add(f.At+f.DownFor)) {
			return
		}
		if err := r.restart(ctx, fr, t.load()); err != nil {
			cancel(err)
		}
	}()
	return fr
}

// restart restarts the killed member and records when, and the phase's
// counters then.
func (r *runner) restart(ctx context.Context, fr *failureRun, counters tallyTotals) error {
	fr.atRestart, fr.restartedAt = counters, time.Now()
	if err := r.cluster.Restart(ctx, fr.f.Member); err != nil {
		return fmt.Errorf("cannot restart cache node %s: %w", fr.f.Member, err)
	}
	fr.restarted = true
	r.pendingRestart = ""
	r.log.Info("restarted cache node", "member", fr.f.Member)
	return nil
}

// sleepUntil waits until at; false if the window or ctx ended first.
func (fr *failureRun) sleepUntil(ctx context.Context, at time.Time) bool {
	t := time.NewTimer(time.Until(at))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-fr.stopc:
		return false
	case <-ctx.Done():
		return false
	}
}

// stop ends the injection (a nil fr is a phase without failure): a Kill or
// Restart under way finishes, the rest is skipped.
func (fr *failureRun) stop() {
	if fr == nil {
		return
	}
	close(fr.stopc)
	<-fr.done
}

// result summarises the injection of a phase that ran from start to end
// with final counters total.
func (fr *failureRun) result(start, end time.Time, total tallyTotals) *FailureResult {
	res := &FailureResult{Member: fr.f.Member, Killed: fr.killed, Restarted: fr.restarted}
	if !fr.killed {
		return res
	}
	res.KilledAt = fr.killedAt.Sub(start).Seconds()
	res.Before = perSecond(fr.atKill.answered(), res.KilledAt)
	downTo, downAt := end, total
	if fr.restarted {
		res.RestartedAt = fr.restartedAt.Sub(start).Seconds()
		if fr.restartedAt.Before(end) {
			downTo, downAt = fr.restartedAt, fr.atRestart
			res.After = perSecond(total.answered()-fr.atRestart.answered(), end.Sub(fr.restartedAt).Seconds())
		}
	}
	res.Down = perSecond(downAt.answered()-fr.atKill.answered(), downTo.Sub(fr.killedAt).Seconds())
	return res
}

// RecoveryShare is the share of the rate before a failure that a timeline
// bin must reach to count as recovered (FailureResult.RecoveredAfter).
const RecoveryShare = 0.9

// analyze fills the dip of res from the failure phase's timeline (bins of
// interval) and map versions: the worst bin between the kill and the
// restart, the time to the first map change and the time to recovery.
func (res *FailureResult) analyze(timeline []Point, interval time.Duration) {
	if !res.Killed {
		return
	}
	res.Interval = interval.Seconds()
	downTo := math.Inf(1)
	if res.Restarted {
		downTo = res.RestartedAt
	}
	first := true
	for _, p := range timeline {
		if p.T-res.Interval < res.KilledAt || p.T > downTo {
			continue
		}
		if first || p.OpsPerSecond < res.Worst {
			res.Worst, res.WorstAt, first = p.OpsPerSecond, p.T, false
		}
		if p.OpsPerSecond < RecoveryShare*res.Before {
			res.RecoveredAfter = p.T - res.KilledAt
		}
	}
	if res.Before > 0 {
		res.WorstRatio = res.Worst / res.Before
	}
	for _, mv := range res.MapVersions {
		if mv.At > res.KilledAt {
			res.MapChangeAfter = mv.At - res.KilledAt
			break
		}
	}
}

// perSecond is n per secs (0 for an empty interval).
func perSecond(n uint64, secs float64) float64 {
	if secs <= 0 {
		return 0
	}
	return float64(n) / secs
}
