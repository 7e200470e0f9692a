package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/distcache/distcache/dataplane/mapwatch"
	"github.com/distcache/distcache/hack/internal/localcluster"
	"github.com/distcache/distcache/standalone/control"
	"github.com/distcache/distcache/standalone/plan"
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
	o   options
	m   mode
	sys system
	p   *prober
	dir string // the mode's directory: each trial's operations (oplog.go)
}

// runMode starts (or, on Kubernetes, connects to) the mode's cluster and
// check, runs its trials and stops both. An error ends the trials early;
// the result keeps what was done.
func (o options) runMode(ctx context.Context, m mode) (res modeResult) {
	res = modeResult{mode: m, loadBefore: loadAverage()}
	start := time.Now()
	defer func() {
		res.loadAfter, res.elapsed = loadAverage(), time.Since(start)
	}()
	fmt.Fprintf(os.Stderr, "failtrials: mode %s, %d trials\n", m, o.trialsOf(m))
	dir := filepath.Join(o.work, m.slug())
	checkDir := filepath.Join(dir, "check")
	sys, acc, done, err := o.open(ctx, m, dir, checkDir)
	defer done()
	if err != nil {
		res.err = err
		return res
	}
	r := &runner{o: o, m: m, sys: sys, dir: dir}
	r.p, err = newProber(ctx, acc)
	if err != nil {
		res.err = err
		return res
	}
	defer r.p.close()
	victims, err := sys.victims(ctx)
	if err != nil {
		res.err = err
		return res
	}
	chk, err := o.startCheck(ctx, acc.checkArgs, checkDir, o.checkBound(m))
	if err != nil {
		res.err = err
		return res
	}
	res.trials, res.err = r.trials(ctx, victims)
	res.verdict, err = chk.finish()
	res.err = errors.Join(res.err, err)
	return res
}

// open readies the mode's cluster in dir: a standalone one started afresh,
// or the CacheCluster of -kube-cluster. done releases what open took.
func (o options) open(ctx context.Context, m mode, dir, checkDir string) (system, access, func(), error) {
	if o.kube.cluster != "" {
		return o.kube.open(ctx, m, dir, checkDir)
	}
	return o.openStandalone(ctx, m, filepath.Join(dir, "run"), checkDir)
}

// openStandalone starts the cluster of -f in runDir.
func (o options) openStandalone(ctx context.Context, m mode, runDir, checkDir string) (system, access, func(), error) {
	if err := fresh(ctx, runDir, checkDir); err != nil {
		return nil, access{}, func() {}, err
	}
	st, down, err := localcluster.Up(ctx, o.distcache, o.clusterFile, runDir, "--gateway=false")
	if err != nil {
		return nil, access{}, down, err
	}
	c := &cluster{api: control.Dial(runDir), name: st.Cluster, pid: st.PID, runDir: runDir, holdLoop: m.controlPlane == "off"}
	acc := access{maps: mapwatch.File(st.MapFile), keyDir: plan.KeyDir(runDir), listen: "127.0.0.1:0",
		checkArgs: []string{"--run-dir", runDir}, mapPoll: 100 * time.Millisecond}
	return c, acc, down, nil
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

// trials takes the control plane down when the mode says so, runs the
// trials with the victims in turn, and brings the control plane back.
func (r *runner) trials(ctx context.Context, victims []string) (results []trialResult, err error) {
	if len(victims) == 0 {
		return nil, errors.New("cannot find a cache node to fault")
	}
	release, err := r.sys.holdControlPlane(ctx)
	if err != nil {
		return nil, err
	}
	defer func() {
		// Not the trials' context: the control plane must come back for the
		// check's read-back even after an interrupt.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Minute)
		defer cancel()
		err = errors.Join(err, release(rctx))
	}()
	for n := range r.o.trialsOf(r.m) {
		victim := victims[n%len(victims)]
		t, err := r.trial(ctx, n, victim)
		results = append(results, t)
		fmt.Fprintln(os.Stderr, "failtrials:", t.line())
		if err != nil {
			return results, fmt.Errorf("trial %d (%s): %w", n, victim, err)
		}
	}
	return results, nil
}
