package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/distcache/distcache/hack/internal/localcluster"
	"github.com/distcache/distcache/standalone/control"
	"github.com/distcache/distcache/workload/checker"
)

// modeResult is what one mode's run found.
type modeResult struct {
	mode    mode
	trials  []trialResult
	verdict *checker.Verdict
	// loadBefore and loadAfter are the host's load averages around the
	// mode's run.
	loadBefore, loadAfter string
	elapsed               time.Duration
	err                   error
}

// runner runs one mode's trials against its cluster.
type runner struct {
	o        options
	m        mode
	c        *cluster
	p        *prober
	loopHeld bool // the control loop is held down
}

// runMode starts the mode's cluster and check, runs its trials and stops
// both. An error ends the trials early; the result keeps what was done.
func (o options) runMode(ctx context.Context, m mode) (res modeResult) {
	res = modeResult{mode: m, loadBefore: loadAverage()}
	start := time.Now()
	defer func() {
		res.loadAfter, res.elapsed = loadAverage(), time.Since(start)
	}()
	fmt.Fprintf(os.Stderr, "failtrials: mode %s, %d trials\n", m, o.trialsOf(m))
	dir := filepath.Join(o.work, m.slug())
	runDir, checkDir := filepath.Join(dir, "run"), filepath.Join(dir, "check")
	if err := fresh(ctx, runDir, checkDir); err != nil {
		res.err = err
		return res
	}
	st, down, err := localcluster.Up(ctx, o.distcache, o.clusterFile, runDir, "--gateway=false")
	defer down()
	if err != nil {
		res.err = err
		return res
	}
	r := &runner{o: o, m: m, c: &cluster{api: control.Dial(runDir), name: st.Cluster, pid: st.PID, runDir: runDir}}
	r.p, err = newProber(ctx, runDir, st.MapFile)
	if err != nil {
		res.err = err
		return res
	}
	defer r.p.close()
	chk, err := o.startCheck(ctx, runDir, checkDir, o.checkBound(m))
	if err != nil {
		res.err = err
		return res
	}
	res.trials, res.err = r.trials(ctx, nodes(st))
	res.verdict, err = chk.finish()
	res.err = errors.Join(res.err, err)
	return res
}

// fresh removes the directories of an earlier run of the mode, unless a
// cluster still runs there, and creates checkDir.
func fresh(ctx context.Context, runDir, checkDir string) error {
	if _, err := control.Dial(runDir).Status(ctx); err == nil {
		return fmt.Errorf("cannot start a cluster in %s: one runs there (distcache down --run-dir %s)", runDir, runDir)
	}
	for _, d := range []string{runDir, checkDir} {
		if err := os.RemoveAll(d); err != nil {
			return fmt.Errorf("cannot remove %s: %w", d, err)
		}
	}
	if err := os.MkdirAll(checkDir, 0o755); err != nil {
		return fmt.Errorf("cannot create %s: %w", checkDir, err)
	}
	return nil
}

// checkBound bounds the check's workload: every trial taking as long as
// its bounds allow, and a margin. The check is interrupted once the trials
// are over.
func (o options) checkBound(m mode) time.Duration {
	perTrial := o.warmTimeout + o.before + o.maxWait + writeTimeout + o.healTimeout
	return time.Duration(o.trialsOf(m))*perTrial + 2*time.Minute
}

// trials holds the control loop down when the mode says so, runs the
// trials with the victims in turn, and starts the loop again.
func (r *runner) trials(ctx context.Context, victims []control.Process) (results []trialResult, err error) {
	if len(victims) == 0 {
		return nil, errors.New("cannot find a cache node in the status")
	}
	if !r.m.controlPlane {
		if err := r.c.stopControlLoop(ctx); err != nil {
			return nil, err
		}
		r.loopHeld = true
		defer func() {
			// Not the trials' context: the loop must come back for the
			// check's read-back even after an interrupt.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
			defer cancel()
			err = errors.Join(err, r.c.startControlLoop(rctx))
		}()
	}
	for n := range r.o.trialsOf(r.m) {
		victim := victims[n%len(victims)].Name
		t, err := r.trial(ctx, n, victim)
		results = append(results, t)
		fmt.Fprintln(os.Stderr, "failtrials:", t.line())
		if err != nil {
			return results, fmt.Errorf("trial %d (%s): %w", n, victim, err)
		}
	}
	return results, nil
}
