package fault

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/distcache/distcache/standalone/faults"
)

// Flags of TestChaosLocal (go test ./test/fault -args -schedules=N ...).
var (
	flagSchedules = flag.Int("schedules", 0, "TestChaosLocal: how many random schedules to run (0: skip the test)")
	flagSeed      = flag.Uint64("seed", 1, "TestChaosLocal: seed of the first schedule; schedule i uses seed+i")
	flagReport    = flag.String("report", "", "TestChaosLocal: report directory (default: a temporary one)")
	flagBundle    = flag.Bool("bundle", false, "TestChaosLocal: the clusters' shims, nodes and gateway send bundles (distcache up --bundle)")
	flagDirect    = flag.Bool("direct-reads", false, "TestChaosLocal: the clients read misses from Redis themselves (distcache up --direct-reads)")
	flagDirectW   = flag.Bool("direct-writes", false, "TestChaosLocal: with -direct-reads, the clients also write the keys no cache may hold to Redis themselves (distcache up --direct-writes)")
	flagCopies    = flag.Bool("adaptive-copies", false, "TestChaosLocal: the clusters' control loops decide the copies of hot keys, which change while the keys are written (distcache up --adaptive-copies)")
	flagKeep      = flag.Bool("keep", false, "keep the clusters' and checkers' files of the short tests (logged) instead of removing them")
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
	buildOut  []byte
	buildDir  string
)

func TestMain(m *testing.M) {
	flag.Parse()
	reapStale()
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// requireEnv skips the test where network namespaces cannot be created,
// and fails it when a program the suite needs is missing (make test-deps
// installs them).
func requireEnv(t *testing.T) {
	t.Helper()
	if err := faults.Supported(); err != nil {
		t.Skipf("skipping the fault-injection suite: %v (it needs root to create network namespaces)", err)
	}
	for _, prog := range []string{"redis-server", faults.IPTables} {
		if _, err := exec.LookPath(prog); err != nil {
			t.Fatalf("%s not on PATH: run make test-deps: %v", prog, err)
		}
	}
}

// distcache builds the distcache binary once per test run: `up` starts
// the cluster by running its own executable, which a test binary is not.
func distcache(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "distcache-fault-")
		if buildErr != nil {
			return
		}
		builtBin = filepath.Join(buildDir, "distcache")
		cmd := exec.CommandContext(context.Background(), "go", "build", "-o", builtBin, "../../cmd/distcache")
		buildOut, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("cannot build distcache: %v\n%s", buildErr, buildOut)
	}
	return builtBin
}

// testDir is a directory for a test's cluster and checker files: removed
// after the test, or kept (and logged) with -keep.
func testDir(t *testing.T) string {
	t.Helper()
	if !*flagKeep {
		return t.TempDir()
	}
	dir, err := os.MkdirTemp("", "distcache-fault-run-")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("files kept in %s", dir)
	return dir
}

// nsPrefix starts the name of every namespace the suite creates; the test
// process's PID follows.
const nsPrefix = "dcfault-"

// reapStale removes what an earlier run of the suite left behind when it
// was killed before its cleanup (a test binary past its -timeout): the
// namespaces named after a test process that no longer exists, and every
// process still running in them, which that run started.
func reapStale() {
	if faults.Supported() != nil {
		return
	}
	entries, err := os.ReadDir("/run/netns")
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), nsPrefix)
		if !ok {
			continue
		}
		owner, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(owner)
		if err != nil || faults.Alive(pid) {
			continue
		}
		if pids, err := faults.PIDsIn(e.Name()); err == nil {
			for _, p := range pids {
				_ = faults.Kill(p)
			}
		}
		_ = exec.CommandContext(context.Background(), "ip", "netns", "delete", e.Name()).Run()
	}
}
