package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/standalone/plan"
	"github.com/distcache/distcache/workload/checker"
)

// syncBuffer is a process's output that the test reads while it runs.
type syncBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// readVerdict decodes dir/verdict.json.
func readVerdict(t *testing.T, dir string) checker.Verdict {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, checker.VerdictJSON))
	if err != nil {
		t.Fatal(err)
	}
	var v checker.Verdict
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// checkPasses runs `distcache check` on the cluster of runDir with 64
// keys for 4 s at most, with the flags of args besides, calls during
// once the workload starts, and returns the verdict; the check must pass.
func checkPasses(t *testing.T, bin, runDir, what string, during func(), args ...string) checker.Verdict {
	t.Helper()
	dir := t.TempDir()
	ready, out := filepath.Join(dir, "ready"), filepath.Join(dir, "check")
	cmd := exec.CommandContext(t.Context(), bin, append([]string{"check", "--run-dir", runDir, "--keys", "64", "--workers", "8",
		"--duration", "4s", "--max-ops", "1000000", "--ready-file", ready, "--out", out}, args...)...)
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the ready file", func() bool { _, err := os.Stat(ready); return err == nil })
	during()
	if err := cmd.Wait(); err != nil || !strings.HasPrefix(stdout.String(), "PASS: ") {
		t.Fatalf("check %s: %v\nstdout:\n%s\nstderr:\n%s", what, err, stdout.String(), stderr.String())
	}
	t.Logf("check %s: %s", what, strings.TrimSpace(stdout.String()))
	return readVerdict(t, out)
}

// TestCheckStandaloneCluster runs `distcache check` against a standalone
// cluster started with `distcache up`: once by its run directory with a
// stale client frozen by SIGUSR1 and thawed by SIGUSR2 while the workload
// runs, once by its map file and Redis addresses (as inside a Kubernetes
// pod), and once on a map file that does not exist. The first two pass
// (exit status 0, with the verdict's files), the last cannot run (2).
func TestCheckStandaloneCluster(t *testing.T) {
	bin := buildDistcache(t)
	file, runDir := clusterFile(t, bin, smallCluster)
	out, err := run(t, bin, "up", "-f", file, "--run-dir", runDir)
	if err != nil {
		t.Fatalf("up: %v\n%s", err, out)
	}

	dir := t.TempDir()
	checkDir, ready := filepath.Join(dir, "check"), filepath.Join(dir, "ready")
	cmd := exec.CommandContext(t.Context(), bin, "check", "--run-dir", runDir, "--keys", "64", "--workers", "8", "--duration", "5s", "--max-ops", "1000000",
		"--stale-clients", "1", "--ready-file", ready, "--out", checkDir)
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the ready file", func() bool { _, err := os.Stat(ready); return err == nil })
	for _, s := range []struct {
		sig syscall.Signal
		ack string
	}{{syscall.SIGUSR1, "stale clients frozen"}, {syscall.SIGUSR2, "stale clients thawed"}} {
		if err := cmd.Process.Signal(s.sig); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, s.ack, func() bool { return strings.Contains(stderr.String(), s.ack) })
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("check: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if !strings.HasPrefix(stdout.String(), "PASS: ") || strings.Count(stdout.String(), "\n") != 1 {
		t.Fatalf("check printed %q, want one PASS line", stdout.String())
	}
	v := readVerdict(t, checkDir)
	if v.Result != checker.Pass || v.Direct == nil || v.Direct.Read != 64 || v.Routed.Read != 64 || len(v.Stale) != 2 || !v.Stale[0].Frozen || v.Stale[1].Frozen {
		t.Fatalf("verdict %s: %d keys read back routed, %+v direct, stale events %+v", v.Result, v.Routed.Read, v.Direct, v.Stale)
	}
	if _, err := os.Stat(filepath.Join(checkDir, checker.VerdictText)); err != nil {
		t.Fatal(err)
	}

	// The map file and Redis addresses alone, as a pod with the map
	// ConfigMap mounted has them.
	st := status(t, bin, runDir)
	// A map alone does not carry the cluster's data-plane key: pass it.
	args := []string{"check", "--map", st.MapFile, "--data-plane-key-dir", plan.KeyDir(runDir),
		"--listen", "127.0.0.1:0", "--keys", "8", "--max-ops", "500", "--duration", "1m", "--out", checkDir}
	for _, p := range st.Processes {
		if p.Kind == "redis" {
			args = append(args, "--redis", p.Shard+"="+p.Addr)
		}
	}
	if out, err := run(t, bin, args...); err != nil || !strings.HasPrefix(out, "check: map "+st.MapFile) {
		t.Fatalf("check --map: %v\n%s", err, out)
	}
	if v := readVerdict(t, checkDir); v.Result != checker.Pass || v.Direct == nil || v.Direct.Read != 8 || v.Counts.Operations != 500 {
		t.Fatalf("check --map: verdict %s after %d operations, %+v read from Redis", v.Result, v.Counts.Operations, v.Direct)
	}

	// An interrupt ends a workload bounded by an hour; the verdict still
	// comes.
	ready = filepath.Join(dir, "ready-again")
	cmd = exec.CommandContext(t.Context(), bin, append(args[:len(args):len(args)], "--max-ops", "100000000", "--duration", "1h", "--ready-file", ready)...)
	stdout, stderr = syncBuffer{}, syncBuffer{}
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the ready file", func() bool { _, err := os.Stat(ready); return err == nil })
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil || !strings.HasPrefix(stdout.String(), "PASS: ") || !strings.Contains(stderr.String(), "the workload ends now") {
		t.Fatalf("check ended by SIGTERM: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if v := readVerdict(t, checkDir); v.Result != checker.Pass || v.Direct == nil || v.Direct.Read != 8 {
		t.Fatalf("check ended by SIGTERM: verdict %s, %+v read from Redis", v.Result, v.Direct)
	}

	out, err = run(t, bin, "check", "--map", filepath.Join(dir, "no-such-map.json"))
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(out, "cannot read partition map") {
		t.Fatalf("check of a missing map: %v, want exit status 2\n%s", err, out)
	}
}

// TestCheckCannotRun checks the configurations check refuses before it
// starts: every one is exit status 2.
func TestCheckCannotRun(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"map and run directory", []string{"--map", "m.json", "--run-dir", dir}, "exclude each other"},
		{"no cluster running", []string{"--run-dir", dir}, "no standalone cluster is running there"},
		{"missing map", []string{"--map", filepath.Join(dir, "none.json")}, "cannot read partition map"},
		{"map file and ConfigMap", []string{"--map", "m.json", "--map-configmap", "ns/m"}, "--map and --map-configmap exclude each other"},
		{"ConfigMap and run directory", []string{"--map-configmap", "ns/m", "--run-dir", dir}, "exclude each other"},
		{"ConfigMap without a namespace", []string{"--map-configmap", "m"}, "NAMESPACE/NAME"},
		{"bad redis address", []string{"--map", "m.json", "--redis", "shard-0"}, "want SHARD=HOST:PORT"},
		{"bad flag value", []string{"--keys", "many"}, "invalid argument"},
		{"an argument", []string{"extra"}, "unknown command"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runCommand(t, append([]string{"check", "--out", t.TempDir()}, tc.args...)...)
			var exit *exitError
			if !errors.As(err, &exit) || exit.ExitCode() != exitUndecided || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v (exit status 2: %v), want one containing %q\n%s", err, exit != nil && exit.code == 2, tc.want, out)
			}
		})
	}
}

func TestVerdictError(t *testing.T) {
	tests := []struct {
		result checker.Result
		code   int // 0: no error
	}{{checker.Pass, 0}, {checker.Fail, exitFail}, {checker.Inconclusive, exitUndecided}}
	for _, tc := range tests {
		err := verdictError(tc.result, "out/verdict.txt")
		var exit *exitError
		switch {
		case tc.code == 0 && err != nil:
			t.Errorf("%s: error %v", tc.result, err)
		case tc.code != 0 && (!errors.As(err, &exit) || exit.ExitCode() != tc.code || !strings.Contains(err.Error(), "out/verdict.txt")):
			t.Errorf("%s: error %v, want exit status %d pointing at the verdict", tc.result, err, tc.code)
		}
	}
}
