package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/workload/checker"
)

// TestMalformedUnderCheck runs `distcache malformed` against a standalone
// cluster while `distcache check` runs a checked workload on it: bad
// datagrams at every shim and cache node, malformed RESP at the gateway
// and garbage HTTP at the metrics ports and the control API, bounded by
// count. No process dies or restarts, every shim's, node's and the
// gateway's bad-input counters rise, the gateway refuses the malformed
// connections, and the check passes: no acknowledged write lost, every
// key's history linearizable.
func TestMalformedUnderCheck(t *testing.T) {
	bin := buildDistcache(t)
	file, runDir := clusterFile(t, bin, smallCluster)
	if out, err := run(t, bin, "up", "-f", file, "--run-dir", runDir); err != nil {
		t.Fatalf("up: %v\n%s", err, out)
	}
	dir := t.TempDir()
	checkDir, ready := filepath.Join(dir, "check"), filepath.Join(dir, "ready")
	check := exec.CommandContext(t.Context(), bin, "check", "--run-dir", runDir, "--keys", "32", "--workers", "4",
		"--duration", "1h", "--max-ops", "100000000", "--ready-file", ready, "--out", checkDir)
	var stdout, stderr syncBuffer
	check.Stdout, check.Stderr = &stdout, &stderr
	if err := check.Start(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the ready file", func() bool { _, err := os.Stat(ready); return err == nil })

	resFile := filepath.Join(dir, "malformed.json")
	out, err := run(t, bin, "malformed", "--run-dir", runDir, "--datagrams", "6000", "--connections", "10",
		"--duration", "1m", "--out", resFile)
	if err != nil {
		t.Fatalf("malformed: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(resFile)
	if err != nil {
		t.Fatal(err)
	}
	var res MalformedResult
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	var sent int64
	for _, n := range res.Report.Datagrams {
		sent += n
	}
	if sent != 6000 || len(res.Died) > 0 || res.Report.Refused == 0 {
		t.Fatalf("sent %d datagrams, died %v, %d connections refused:\n%s", sent, res.Died, res.Report.Refused, out)
	}
	kinds := map[string]int{}
	for _, p := range res.Processes {
		if p.PIDBefore == 0 || p.PIDAfter != p.PIDBefore {
			t.Errorf("%s: pid %d → %d", p.Name, p.PIDBefore, p.PIDAfter)
		}
		switch p.Kind {
		case "shim", "node", "gateway":
			kinds[p.Kind]++
			if !(p.After.Total() > p.Before.Total()) {
				t.Errorf("%s (%s): bad input counted %v before, %v after", p.Name, p.Kind, p.Before, p.After)
			}
		}
	}
	if kinds["shim"] != 2 || kinds["node"] != 4 || kinds["gateway"] != 1 {
		t.Fatalf("processes scraped: %v\n%s", kinds, out)
	}

	if err := check.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := check.Wait(); err != nil || !strings.HasPrefix(stdout.String(), "PASS: ") {
		t.Fatalf("check: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	v := readVerdict(t, checkDir)
	if v.Result != checker.Pass || v.Direct == nil || v.Direct.Read != 32 || v.Routed.Read != 32 {
		t.Fatalf("verdict %s: %d keys read back routed, %+v direct", v.Result, v.Routed.Read, v.Direct)
	}
	t.Logf("%s\ncheck: %d operations, %d acknowledged writes, %d failed reads, %d unknown", out,
		v.Counts.Operations, v.Counts.Acknowledged, v.Counts.FailedReads, v.Counts.Unknown)
}
