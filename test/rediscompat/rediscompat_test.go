// Package rediscompat runs units of Redis's own Tcl test suite against the
// gateway of a standalone cluster, as `make redis-compat` runs them all
// (internal/testing/rediscompat), and fails when fewer of a unit's tests
// pass than testdata/floors.txt records.
package rediscompat

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/distcache/distcache/internal/testing/kubetest"
	"github.com/distcache/distcache/internal/testing/rediscompat"
)

var update = flag.Bool("update", false, "rewrite testdata/floors.txt with the tests that passed in this run")

// units are the units this test runs: all of make redis-compat's, in
// about two minutes.
var units = rediscompat.Units

const floorsFile = "testdata/floors.txt"

// TestSuiteFloors runs units against a fresh cluster each and checks that
// at least as many of each unit's tests pass as testdata/floors.txt says.
// It skips only when Debian's redis source package, which holds the
// suite, cannot be downloaded.
func TestSuiteFloors(t *testing.T) {
	if _, err := exec.LookPath("tclsh"); err != nil {
		t.Fatal("tclsh not on PATH: Redis's test suite runs with it (make test installs Debian's tcl)")
	}
	cache := os.Getenv("DISTCACHE_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatal(err)
		}
		cache = filepath.Join(home, ".cache", "distcache")
	}
	src, err := rediscompat.Fetch(t.Context(), cache)
	if errors.Is(err, rediscompat.ErrUnavailable) {
		t.Skipf("Redis's test suite cannot be fetched from Debian's redis source package (no network?): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	root := kubetest.RepoRoot()
	work := t.TempDir()
	bin := filepath.Join(work, "distcache")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./cmd/distcache")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("cannot build distcache: %v\n%s", err, out)
	}
	outputs := map[string][]byte{}
	run := rediscompat.RunOptions{Timeout: 300 * time.Second, Stall: 120 * time.Second, DenyTags: rediscompat.DenyTags}
	results, err := rediscompat.RunUnits(t.Context(), src, rediscompat.Options{
		Distcache:   bin,
		ClusterFile: filepath.Join(root, "hack", "rediscompat", "cluster.yaml"),
		WorkDir:     work,
		Units:       units,
		Run:         run,
		Output:      func(unit string, out []byte) { outputs[unit] = out },
	})
	if err != nil {
		t.Fatal(err)
	}
	report := rediscompat.Report{Results: results}
	t.Logf("Debian's redis %s, %s\n%s", src.Version, rediscompat.Command(run), report.Table())
	if *update {
		writeFloors(t, results)
		return
	}
	floors := readFloors(t)
	for _, res := range results {
		floor, ok := floors[res.Unit]
		if !ok {
			t.Errorf("%s: no floor in %s (go test -run TestSuiteFloors ./test/rediscompat -update)", res.Unit, floorsFile)
			continue
		}
		if res.Passed < floor {
			var failed strings.Builder
			for _, f := range res.Failures {
				fmt.Fprintf(&failed, "  %q: %s\n", f.Test, f.Message)
			}
			t.Errorf("%s: %d tests passed, fewer than the %d of %s; aborted: %v %s; failures:\n%s\noutput:\n%s",
				res.Unit, res.Passed, floor, floorsFile, res.Aborted, res.AbortReason, failed.String(), outputs[res.Unit])
		}
	}
}

// readFloors reads floorsFile: "UNIT PASSED" lines, # comments.
func readFloors(t *testing.T) map[string]int {
	t.Helper()
	data, err := os.ReadFile(floorsFile)
	if err != nil {
		t.Fatalf("cannot read the floors (go test -run TestSuiteFloors ./test/rediscompat -update writes them): %v", err)
	}
	floors := map[string]int{}
	s := bufio.NewScanner(bytes.NewReader(data))
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		unit, n, ok := strings.Cut(line, " ")
		passed, err := strconv.Atoi(strings.TrimSpace(n))
		if !ok || err != nil {
			t.Fatalf("%s: line %q is not UNIT PASSED", floorsFile, line)
		}
		floors[unit] = passed
	}
	return floors
}

func writeFloors(t *testing.T, results []rediscompat.Result) {
	t.Helper()
	var b strings.Builder
	b.WriteString("# The tests of each unit of Redis's own test suite that pass against the\n" +
		"# gateway, at least: TestSuiteFloors fails when fewer do. Written by\n" +
		"# go test -run TestSuiteFloors ./test/rediscompat -update\n")
	for _, res := range results {
		fmt.Fprintf(&b, "%s %d\n", res.Unit, res.Passed)
	}
	if err := os.WriteFile(floorsFile, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
