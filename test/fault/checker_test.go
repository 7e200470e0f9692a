package fault

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/standalone/faults"
	"github.com/distcache/distcache/workload/checker"
)

// checkOptions are the flags of one `distcache check` run.
type checkOptions struct {
	duration     time.Duration
	staleClients int
	seed         uint64
	failBackoff  time.Duration // how long clients skip a node that timed out (0: the client's default)
	keys         int           // the workload's keys (0: 32, every one cached)
	rate         float64       // operations per second at most (0: no limit)
	maxOps       int           // the workload's operation bound (0: 200,000)
}

// The checker's settings beyond checkOptions. 8 workers keep the hottest
// key's history short enough for the linearizability check (16 workers
// left it undecided within minutes on a loaded 2-core machine); the check
// may take up to checkTimeout before a key counts as unchecked.
// Operations time out after opTimeout: long enough that a write held up by
// a fault (a paused shim, a partition, a killed Redis) mostly completes
// after it heals instead of ending with an unknown outcome, which the
// check must treat as concurrent with everything after it.
const (
	checkWorkers = 8
	checkTimeout = 5 * time.Minute
	opTimeout    = 10 * time.Second
)

// checkerRun is a `distcache check` running in the cluster's namespace.
type checkerRun struct {
	pid      int
	out      string // its --out directory
	ready    string // its --ready-file
	log      string // its stdout and stderr
	duration time.Duration
	exited   chan struct{}
	exitCode int // valid once exited is closed
	waitErr  error
}

// startChecker starts a checked workload against c; its files go to dir.
func startChecker(t *testing.T, c *cluster, dir string, o checkOptions) *checkerRun {
	t.Helper()
	r := &checkerRun{
		out: filepath.Join(dir, "check"), ready: filepath.Join(dir, "check.ready"), log: filepath.Join(dir, "check.log"),
		duration: o.duration, exited: make(chan struct{}),
	}
	logf, err := os.Create(r.log)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	args := []string{"check", "--run-dir", c.runDir,
		"--duration", o.duration.String(), "--max-ops", strconv.Itoa(cmp.Or(o.maxOps, 200_000)), "--rate", strconv.FormatFloat(o.rate, 'f', -1, 64),
		"--keys", strconv.Itoa(cmp.Or(o.keys, 32)), "--skew", "1.0", "--write-ratio", "0.3", "--delete-share", "0.1",
		"--clients", "4", "--workers", strconv.Itoa(checkWorkers), "--stale-clients", strconv.Itoa(o.staleClients),
		"--seed", strconv.FormatUint(o.seed, 10), "--op-timeout", opTimeout.String(), "--map-poll", "100ms", "--check-timeout", checkTimeout.String(),
		"--out", r.out, "--ready-file", r.ready}
	if o.failBackoff > 0 {
		args = append(args, "--fail-backoff", o.failBackoff.String())
	}
	cmd := c.ns.Command(context.WithoutCancel(t.Context()), c.bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// The checker dies with the test process (`ip netns exec` execs it in
	// place, keeping this).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("cannot start distcache check: %v", err)
	}
	r.pid = cmd.Process.Pid
	c.track(r.pid, "checker")
	go func() {
		defer close(r.exited)
		r.waitErr = cmd.Wait()
		r.exitCode = cmd.ProcessState.ExitCode()
	}()
	t.Cleanup(func() {
		select {
		case <-r.exited:
		default:
			_ = cmd.Process.Kill()
			<-r.exited
		}
	})
	return r
}

// waitReady waits until the checker's preload is done and its timed
// workload runs (its ready file exists); it fails the test if the checker
// exits first.
func (r *checkerRun) waitReady(t *testing.T) time.Time {
	t.Helper()
	poll.Eventually(t, "the checker's workload starts", func() (bool, error) {
		select {
		case <-r.exited:
			t.Fatalf("distcache check exited with %d before its workload started:\n%s", r.exitCode, readFileTail(r.log, 4096))
		default:
		}
		_, err := os.Stat(r.ready)
		return err == nil, err
	})
	return time.Now()
}

// endWorkload ends the checker's timed workload (SIGTERM); its read-back
// and check still run.
func (r *checkerRun) endWorkload(t *testing.T) {
	t.Helper()
	if err := faults.Signal(r.pid, syscall.SIGTERM); err != nil {
		t.Fatalf("cannot end the checker's workload: %v", err)
	}
}

// wait waits for the checker to end (bounded by its duration and generous
// read-back and check times) and returns its exit code: 0 pass, 1
// violations or lost writes, 2 could not run.
func (r *checkerRun) wait() (int, error) {
	select {
	case <-r.exited:
		var exitErr *exec.ExitError
		if r.waitErr != nil && !errors.As(r.waitErr, &exitErr) {
			return -1, fmt.Errorf("distcache check: %w", r.waitErr)
		}
		return r.exitCode, nil
	case <-time.After(r.duration + checkTimeout + 5*time.Minute):
		return -1, fmt.Errorf("distcache check did not end within %v of its duration", checkTimeout+5*time.Minute)
	}
}

// readVerdict reads the checker's verdict.json.
func (r *checkerRun) readVerdict() (*checker.Verdict, error) {
	b, err := os.ReadFile(filepath.Join(r.out, checker.VerdictJSON))
	if err != nil {
		return nil, fmt.Errorf("cannot read the checker's verdict: %w", err)
	}
	var v checker.Verdict
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("cannot decode the checker's verdict: %w", err)
	}
	return &v, nil
}
