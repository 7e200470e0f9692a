package driver

import (
	"context"
	"fmt"
	"math"
	"time"
)

// Verbs are what injecting a failure of mode m and recovering from it are
// called: "kill" and "restart", "pause" and "resume", "slow" and
// "restore" (an unknown mode is a kill's).
func (m FailureMode) Verbs() (failVerb, recoverVerb string) {
	switch m {
	case FailPause:
		return "pause", "resume"
	case FailSlow:
		return "slow", "restore"
	default:
		return "kill", "restart"
	}
}

// failureRun injects a Failure into a measured phase: the failure at At
// after the phase started, the recovery at At + DownFor. Its goroutine owns
// every field but stopc and done until done is closed; the runner reads
// them afterwards.
type failureRun struct {
	f     Failure
	stopc chan struct{} // closed when the phase's window ends
	done  chan struct{} // closed when the goroutine has returned

	injected, recovered     bool
	workAt                  time.Time // when workAtFailure was read (the scrape's midpoint), just before the failure
	answeredAtWork          uint64    // the phase's answered operations at workAt
	injectedAt, recoveredAt time.Time
	workAtFailure           []Work
	atFailure, atRecovery   tallyTotals // the phase's counters then
}

// startFailure starts injecting f into the phase that started at start; a
// failed Cluster call cancels the phase with the error as the cause.
func (r *runner) startFailure(ctx context.Context, cancel context.CancelCauseFunc, f Failure, start time.Time, t *tally) *failureRun {
	fr := &failureRun{f: f, stopc: make(chan struct{}), done: make(chan struct{})}
	failVerb, _ := f.mode().Verbs()
	go func() {
		defer close(fr.done)
		if !fr.sleepUntil(ctx, start.Add(f.At)) {
			return
		}
		var err error
		before, t0 := t.load(), time.Now()
		if fr.workAtFailure, err = r.cluster.Work(ctx); err != nil {
			cancel(fmt.Errorf("cannot read the cluster's work before the %s of %s: %w", failVerb, f.Member, err))
			return
		}
		fr.atFailure, fr.injectedAt = t.load(), time.Now()
		// Each process's work was read at some moment of the scrape, which
		// takes a while on a loaded machine: take its midpoint, and the
		// operations answered by then interpolated, so that the capacity
		// window's rate and loads cover the same time.
		fr.workAt = t0.Add(fr.injectedAt.Sub(t0) / 2)
		fr.answeredAtWork = (before.answered() + fr.atFailure.answered()) / 2
		if err := r.inject(ctx, f); err != nil {
			cancel(fmt.Errorf("cannot %s cache node %s: %w", failVerb, f.Member, err))
			return
		}
		fr.injected = true
		r.pending = &fr.f
		r.log.Info("failed cache node", "member", f.Member, "mode", f.mode(), "at", fr.injectedAt.Sub(start))
		if !fr.sleepUntil(ctx, start.Add(f.At+f.DownFor)) {
			return
		}
		if err := r.recoverFailure(ctx, fr, t.load()); err != nil {
			cancel(err)
		}
	}()
	return fr
}

// inject fails f's member as f's mode says.
func (r *runner) inject(ctx context.Context, f Failure) error {
	switch f.mode() {
	case FailPause:
		return r.cluster.Pause(ctx, f.Member)
	case FailSlow:
		return r.cluster.Slow(ctx, f.Member, f.Delay)
	default:
		return r.cluster.Kill(ctx, f.Member)
	}
}

// undo ends the failure f injected: restarts, resumes or restores its
// member.
func (r *runner) undo(ctx context.Context, f Failure) error {
	var err error
	switch f.mode() {
	case FailPause:
		err = r.cluster.Resume(ctx, f.Member)
	case FailSlow:
		err = r.cluster.Unslow(ctx, f.Member)
	default:
		err = r.cluster.Restart(ctx, f.Member)
	}
	if err != nil {
		_, recoverVerb := f.mode().Verbs()
		return fmt.Errorf("cannot %s cache node %s: %w", recoverVerb, f.Member, err)
	}
	return nil
}

// recoverFailure ends the failure of fr and records when, and the phase's
// counters then.
func (r *runner) recoverFailure(ctx context.Context, fr *failureRun, counters tallyTotals) error {
	fr.atRecovery, fr.recoveredAt = counters, time.Now()
	if err := r.undo(ctx, fr.f); err != nil {
		return err
	}
	fr.recovered = true
	r.pending = nil
	r.log.Info("recovered cache node", "member", fr.f.Member, "mode", fr.f.mode())
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

// stop ends the injection (a nil fr is a phase without failure): a
// failure or recovery under way finishes, the rest is skipped.
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
	res := &FailureResult{Member: fr.f.Member, Mode: fr.f.mode(), Killed: fr.injected, Restarted: fr.recovered}
	if res.Mode == FailSlow {
		res.DelaySeconds = fr.f.Delay.Seconds()
	}
	if !fr.injected {
		return res
	}
	res.KilledAt = fr.injectedAt.Sub(start).Seconds()
	res.Before = perSecond(fr.atFailure.answered(), res.KilledAt)
	downTo, downAt := end, total
	if fr.recovered {
		res.RestartedAt = fr.recoveredAt.Sub(start).Seconds()
		if fr.recoveredAt.Before(end) {
			downTo, downAt = fr.recoveredAt, fr.atRecovery
			res.After = perSecond(total.answered()-fr.atRecovery.answered(), end.Sub(fr.recoveredAt).Seconds())
		}
	}
	res.Down = perSecond(downAt.answered()-fr.atFailure.answered(), downTo.Sub(fr.injectedAt).Seconds())
	return res
}

// RecoveryShare is the share of the rate before a failure that a timeline
// bin must reach to count as recovered (FailureResult.RecoveredAfter).
const RecoveryShare = 0.9

// analyze fills the dip of res from the failure phase's timeline (bins of
// interval) and map versions: the worst bin between the failure and the
// recovery, the time to the first map change and the time to recovery.
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
