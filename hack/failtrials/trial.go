package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// bin is the width of the bins of completed operations after a fault.
const bin = 250 * time.Millisecond

// trialResult is what one trial measured.
type trialResult struct {
	n      int
	victim string
	// skipped says why nothing was measured ("" when the fault was
	// injected).
	skipped string
	// unavailable is the write unavailability of the victim's keys.
	unavailable sample
	failedReads int
	reads       int
	// worst is the worst bin's rate of completed operations as a fraction
	// of the rate before the fault (NaN: undefined), worstReads that of the
	// reads alone, before the rate of operations before the fault per
	// second.
	worst, worstReads, before float64
	heal                      time.Duration
	// warm is how long the probe keys took to be cached at the victim.
	warm time.Duration
	// changes are the victim's member states in the map after the fault.
	changes string
}

// trial runs trial n against victim: it caches probe keys at the victim,
// injects the fault, measures, and waits until the cluster has healed.
func (r *runner) trial(ctx context.Context, n int, victim string) (trialResult, error) {
	res := trialResult{n: n, victim: victim}
	pl := r.p.c.Placement()
	tg, err := victimTarget(pl, victim)
	if err != nil {
		return res, err
	}
	keys, err := probeKeys(pl, tg, n, r.o.keys)
	if err != nil {
		return res, err
	}
	l := startLoad(ctx, r.p.c, keys, tg, n)
	err = poll(ctx, r.o.warmTimeout, "the probe keys cached at "+victim, func() (bool, error) { return l.allCached(), nil })
	if err != nil {
		ops, _ := l.stop()
		res.failedReads, res.reads = failedReads(ops)
		res.skipped = fmt.Sprintf("probe keys not cached at the victim within %v", r.o.warmTimeout)
		return res, ctx.Err()
	}
	res.warm = l.since()
	if err := wait(ctx, r.o.before); err != nil {
		ops, _ := l.stop()
		res.failedReads, res.reads = failedReads(ops)
		res.skipped = "not measured: " + err.Error()
		return res, err
	}
	fault, v, err := r.observeFault(ctx, l, victim)
	ops, end := l.stop()
	if err != nil {
		// Not a measurement: the trial was interrupted or the fault failed.
		res.failedReads, res.reads = failedReads(ops)
		res.skipped = "not measured: " + err.Error()
		return res, err
	}
	r.o.measure(&res, ops, len(keys), fault, end)
	if err := writeOps(filepath.Join(r.dir, fmt.Sprintf("trial-%02d-ops.csv", n)), ops, fault); err != nil {
		return res, err
	}
	// A paused node keeps its process, as does one whose machine was cut
	// off (down on Kubernetes).
	restarted := r.m.fault == "kill" || (r.m.fault == "down" && r.o.kube.cluster == "")
	res.changes, res.heal, err = r.sys.waitHealed(ctx, r.o.healTimeout, v, restarted, l.start.Add(fault), r.p)
	return res, err
}

// measure computes r's numbers from the load's ops, the fault at fault and
// the end of issuing at end.
func (o options) measure(r *trialResult, ops []op, keys int, fault, end time.Duration) {
	d, ok := recovery(ops, keys, fault)
	if !ok || d > o.maxWait {
		r.unavailable = sample{d: o.maxWait, censored: true}
	} else {
		r.unavailable = sample{d: d}
	}
	r.failedReads, r.reads = failedReads(ops)
	r.worst = worstBin(ops, fault, end, o.before, bin, anyOp)
	r.worstReads = worstBin(ops, fault, end, o.before, bin, readOp)
	var pre int
	for _, x := range ops {
		if x.ok && x.ret >= fault-o.before && x.ret < fault {
			pre++
		}
	}
	r.before = float64(pre) / o.before.Seconds()
}

// observeFault injects the fault into victim while the load runs and
// returns when every probe key has been written since (and -observe has
// passed) or -max-wait has: the fault's time on the load's clock, and the
// victim's process before the fault. The mode's fault window (see
// system.faultWindow) spans the fault and the observation.
func (r *runner) observeFault(ctx context.Context, l *load, victim string) (time.Duration, victimProc, error) {
	o := r.o
	v, err := r.sys.locate(ctx, victim)
	if err != nil {
		return 0, v, err
	}
	sig := syscall.SIGKILL
	if r.m.fault == "pause" {
		sig = syscall.SIGSTOP
	}
	endWindow, err := r.sys.faultWindow(ctx)
	if err != nil {
		return 0, v, err
	}
	defer endWindow()
	fault := l.since()
	if r.m.fault == "down" {
		// Killed and held down until the observation ends: a node that
		// does not come back, as a lost machine.
		restart, err := r.sys.down(ctx, victim, func() { fault = l.since() })
		if err != nil {
			return fault, v, err
		}
		defer func() {
			if err := restart(context.WithoutCancel(ctx)); err != nil {
				fmt.Fprintln(os.Stderr, "failtrials:", err)
			}
		}()
	} else if err := r.sys.signal(v, sig); err != nil {
		return fault, v, err
	}
	var resumeOnce sync.Once
	resume := func() {
		resumeOnce.Do(func() {
			if err := r.sys.signal(v, syscall.SIGCONT); err != nil {
				fmt.Fprintln(os.Stderr, "failtrials:", err)
			}
		})
	}
	if sig == syscall.SIGSTOP {
		defer resume()
	}
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		now := l.since()
		if sig == syscall.SIGSTOP && now >= fault+o.pause {
			resume()
		}
		if now >= fault+o.maxWait || (now >= fault+o.observe && l.writtenSince(fault)) {
			return fault, v, nil
		}
		select {
		case <-ctx.Done():
			return fault, v, ctx.Err()
		case <-t.C:
		}
	}
}

// wait waits for d, or until ctx ends.
func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
