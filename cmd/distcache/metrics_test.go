package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distcache/distcache/standalone/control"
)

// TestMetricsPassPromtool scrapes /metrics of every process of a standalone
// cluster started with `distcache up` — storage shims, cache nodes of both
// layers and the control loop — after a short workload, and runs `promtool
// check metrics` (Debian's prometheus package; `make test` installs it) on
// each: names, units, types and help texts follow Prometheus' conventions.
func TestMetricsPassPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not on PATH: `make prometheus` installs it")
	}
	bin := buildDistcache(t)
	dir := t.TempDir()
	file, runDir := filepath.Join(dir, "cluster.yaml"), filepath.Join(dir, "run")
	if err := os.WriteFile(file, []byte(smallCluster), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, bin, "up", "-f", file, "--run-dir", runDir)
	t.Cleanup(func() { _, _ = run(t, bin, "down", "--run-dir", runDir) })
	if err != nil {
		t.Fatalf("up: %v\n%s", err, out)
	}
	// Requests of every kind, so that the labelled series exist.
	if out, err := run(t, bin, "bench", "--run-dir", runDir, "--rate", "2000", "--duration", "2s", "--warmup", "0s",
		"--keys", "200", "--write-ratio", "0.2", "--predict=false"); err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	out, err = run(t, bin, "status", "--run-dir", runDir, "--json")
	if err != nil {
		t.Fatalf("status: %v\n%s", err, out)
	}
	var st control.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, p := range st.Processes {
		if p.MetricsAddr == "" {
			continue
		}
		kinds[p.Kind]++
		resp, err := http.Get("http://" + p.MetricsAddr + "/metrics")
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(t.Context(), promtool, "check", "metrics")
		cmd.Stdin = strings.NewReader(string(body))
		if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
			t.Errorf("promtool check metrics on %s (%s): %v\n%s", p.Name, p.Kind, err, out)
		}
	}
	if kinds["node"] != 4 || kinds["shim"] != 2 || kinds["controlloop"] != 1 {
		t.Fatalf("processes with metrics by kind: %v, want 4 nodes, 2 shims and the control loop", kinds)
	}
}
