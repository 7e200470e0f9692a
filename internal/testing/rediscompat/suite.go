package rediscompat

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Units are the units `make redis-compat` runs: every unit of the types
// (tests/unit/type of Redis 7.0: list-common.tcl is code the list
// units source), expiry, the keyspace, the protocol, transactions and
// scripting.
var Units = []string{
	"unit/type/string", "unit/type/incr", "unit/type/hash",
	"unit/type/list", "unit/type/list-2", "unit/type/list-3",
	"unit/type/set", "unit/type/zset", "unit/type/stream", "unit/type/stream-cgroups",
	"unit/expire", "unit/keyspace", "unit/protocol", "unit/multi", "unit/scripting",
}

// DenyTags are the suite's tags of tests that need a capability of the
// server itself (tests/README.md: replication, DEBUG and OBJECT, PFDEBUG,
// SAVE, memory limits, CONFIG RESETSTAT, RESET, the latency monitor, a
// server process on this host): the suite's way to run against a server
// without them, as `--tags -needs:repl` in its README.
var DenyTags = []string{
	"needs:repl", "needs:debug", "needs:pfdebug", "needs:save", "needs:config-maxmemory",
	"needs:config-resetstat", "needs:reset", "needs:latency", "needs:local-process",
}

// Suite is a working copy of a source tree's tests directory, in which
// the suite runs as it is (it writes under tests/tmp).
type Suite struct {
	dir    string
	Source Source
}

// NewSuite copies the tests directory of src into dir.
func NewSuite(src Source, dir string) (*Suite, error) {
	from := filepath.Join(src.Dir, "tests")
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src.Dir, path)
		to := filepath.Join(dir, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(to, data, 0o644)
	})
	if err != nil {
		return nil, fmt.Errorf("cannot copy the suite from %s: %w", from, err)
	}
	return &Suite{dir: dir, Source: src}, nil
}

// RunOptions bound and shape a unit's run.
type RunOptions struct {
	// Timeout bounds the run.
	Timeout time.Duration
	// Stall is the suite's own --timeout: it gives up on a unit whose
	// test client reports no progress for that long (a test that waits
	// for a reply that never comes). 0: Timeout.
	Stall time.Duration
	// DenyTags are passed as --tags -TAG.
	DenyTags []string
}

// Args are the suite's arguments for unit against the gateway at addr.
func (o RunOptions) Args(gateway, unit string) ([]string, error) {
	host, port, ok := strings.Cut(gateway, ":")
	if !ok {
		return nil, fmt.Errorf("cannot run the suite: gateway address %q has no port", gateway)
	}
	// --cluster-mode: the gateway answers as one Redis Cluster does (one
	// database, keys of several slots refused), so the suite leaves out
	// the tests it tags cluster:skip.
	args := []string{"tests/test_helper.tcl", "--host", host, "--port", port, "--cluster-mode",
		"--durable", "--clients", "1", "--timeout", strconv.Itoa(int(cmp.Or(o.Stall, o.Timeout).Seconds()))}
	if len(o.DenyTags) > 0 {
		deny := make([]string, len(o.DenyTags))
		for i, t := range o.DenyTags {
			deny[i] = "-" + t
		}
		args = append(args, "--tags", strings.Join(deny, " "))
	}
	return append(args, "--single", unit), nil
}

// Run runs unit against the cluster's gateway with tclsh and returns the
// suite's output and its parsed result. The suite runs in a process group
// of its own (it starts a test client process), killed by its PID when
// the run outlasts o.Timeout.
//
// The suite listens for its test client on a port it finds free in the
// 32 below --baseport (and whose port+10000 is free too); two suites
// started together may find the same one, and one of them then cannot
// listen. So each run draws its --baseport at random, below the
// ephemeral ports that the clusters' processes get, and a suite that
// could not listen runs again, at most attempts times in all.
func (s *Suite) Run(ctx context.Context, c *Cluster, unit string, o RunOptions) ([]byte, Result, error) {
	const attempts = 3
	for i := 1; ; i++ {
		out, res, err := s.runOnce(ctx, c, unit, o, 12000+rand.IntN(10000))
		if err != nil || i == attempts || !cannotListen(out) {
			return out, res, err
		}
	}
}

// cannotListen reports the output of a suite that could not listen for
// its test client.
func cannotListen(out []byte) bool {
	return bytes.Contains(out, []byte("couldn't open socket")) && !bytes.Contains(out, []byte("[ready]"))
}

func (s *Suite) runOnce(parent context.Context, c *Cluster, unit string, o RunOptions, basePort int) ([]byte, Result, error) {
	args, err := o.Args(c.Gateway, unit)
	if err != nil {
		return nil, Result{}, err
	}
	args = append(args, "--baseport", strconv.Itoa(basePort+32))
	// A file, not a pipe: the test client inherits it, and Wait would
	// wait for a pipe's last writer.
	outFile, err := os.CreateTemp(s.dir, "output-*.log")
	if err != nil {
		return nil, Result{}, fmt.Errorf("cannot create the suite's output file: %w", err)
	}
	defer func() { _ = os.Remove(outFile.Name()) }()
	defer func() { _ = outFile.Close() }()
	ctx, cancel := context.WithTimeout(parent, o.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "tclsh", args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "TERM=dumb")
	cmd.Stdout, cmd.Stderr = outFile, outFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	runErr := cmd.Run()
	if cmd.Process != nil && syscall.Kill(-cmd.Process.Pid, 0) == nil {
		// The suite's test client outlived it.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	out, err := os.ReadFile(outFile.Name())
	if err != nil {
		return nil, Result{}, fmt.Errorf("cannot read the suite's output: %w", err)
	}
	res := Parse(unit, out)
	var exit *exec.ExitError
	switch {
	case parent.Err() != nil:
		return out, res, fmt.Errorf("cannot run the suite's unit %s: %w", unit, parent.Err())
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		res.Aborted, res.AbortReason = true, fmt.Sprintf("killed after %s", o.Timeout)
	case runErr != nil && !errors.As(runErr, &exit):
		return out, res, fmt.Errorf("cannot run the suite's unit %s: %w", unit, runErr)
	}
	return out, res, nil
}
