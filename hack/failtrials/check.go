package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/distcache/distcache/workload/checker"
)

// Bounds of `distcache check` after its workload ends.
const (
	checkTimeout    = 5 * time.Minute  // its --check-timeout
	readBackTimeout = 30 * time.Second // its --read-back-timeout
)

// checkRun is `distcache check` running against the cluster for the whole
// of a mode's trials.
type checkRun struct {
	cmd    *exec.Cmd
	out    string // its --out directory
	stdout bytes.Buffer
	exited chan struct{} // closed when it has exited
	err    error         // its exit, once exited is closed
}

// startCheck starts `distcache check` against the cluster where points
// at, with a workload bounded by duration (it is interrupted earlier, once
// the trials are over), and waits until its preload is done.
func (o options) startCheck(ctx context.Context, where []string, out string, duration time.Duration) (*checkRun, error) {
	ready := filepath.Join(out, "ready")
	args := append([]string{"check"}, where...)
	args = append(args, "--out", out, "--ready-file", ready,
		"--duration", duration.String(),
		"--max-ops", strconv.Itoa(int(o.checkRate*duration.Seconds())+1),
		"--rate", strconv.FormatFloat(o.checkRate, 'g', -1, 64),
		"--clients", "2", "--workers", "8",
		// As the fault suite's: a write held up by a fault mostly completes
		// once it heals instead of ending with an unknown outcome.
		"--op-timeout", "10s",
		"--check-timeout", checkTimeout.String(), "--read-back-timeout", readBackTimeout.String())
	logf, err := os.Create(filepath.Join(out, "check.log"))
	if err != nil {
		return nil, fmt.Errorf("cannot create the check's log: %w", err)
	}
	r := &checkRun{out: out, exited: make(chan struct{})}
	// Not CommandContext: an interrupted run must still end with a verdict.
	r.cmd = exec.Command(o.distcache, args...)
	r.cmd.Stdout, r.cmd.Stderr = &r.stdout, logf
	// A process group of its own: a terminal's interrupt would otherwise
	// reach it too, and a second SIGINT ends it without a verdict.
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	fmt.Fprintf(os.Stderr, "failtrials: %s %s\n", o.distcache, strings.Join(args, " "))
	if err := r.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("cannot start the check: %w", err)
	}
	go func() {
		r.err = r.cmd.Wait()
		logf.Close()
		close(r.exited)
	}()
	err = poll(ctx, 2*time.Minute, "the check's preload done", func() (bool, error) {
		select {
		case <-r.exited:
			return false, fmt.Errorf("cannot run the check: it exited during its preload (%v); see %s", r.err, logf.Name())
		default:
		}
		_, err := os.Stat(ready)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		r.kill()
	}
	return r, err
}

// finish ends the check's workload (SIGINT), waits for its verdict within
// the check's own bounds and reads it.
func (r *checkRun) finish() (*checker.Verdict, error) {
	if err := r.cmd.Process.Signal(syscall.SIGINT); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return nil, fmt.Errorf("cannot interrupt the check: %w", err)
	}
	select {
	case <-r.exited:
	case <-time.After(checkTimeout + readBackTimeout + time.Minute):
		r.kill()
		return nil, errors.New("cannot get the check's verdict: it did not end in time")
	}
	b, err := os.ReadFile(filepath.Join(r.out, "verdict.json"))
	if err != nil {
		return nil, fmt.Errorf("cannot read the check's verdict (%v, %s): %w", r.err, strings.TrimSpace(r.stdout.String()), err)
	}
	var v checker.Verdict
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("cannot decode the check's verdict: %w", err)
	}
	return &v, nil
}

// kill ends the check without a verdict: SIGKILL to the PID this command
// started, then waits for it.
func (r *checkRun) kill() {
	select {
	case <-r.exited:
		return
	default:
	}
	_ = r.cmd.Process.Kill()
	<-r.exited
}
