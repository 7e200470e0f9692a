package fault

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/distcache/distcache/standalone/faults"
	"github.com/distcache/distcache/test/fault/schedule"
)

var update = flag.Bool("update", false, "rewrite the golden files of the report")

// TestReportGolden renders a report of two schedules, one passing and one
// with a violation, a lost write and a run error, and compares report.txt
// with testdata/report.txt.golden (go test -run TestReportGolden -args
// -update rewrites it); report.json must decode to the same totals.
func TestReportGolden(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := t0.Add
	s := schedule.Schedule{Seed: 7, Cluster: clusterFile, HealBy: 18 * time.Second}
	pass := result{
		Number: 1, Seed: 7, Schedule: s, Dir: "out/chaos/schedule-001", FaultStart: t0, Verdict: "PASS",
		Operations: 61234, MapVersions: [2]int64{1, 3},
		Faults: []faults.Record{
			{Kind: "pause-node", Targets: []string{"fault-spine-0"}, Detail: "SIGSTOP/SIGCONT pid 4242", Start: at(2 * time.Second), End: at(4500 * time.Millisecond)},
			{Kind: "delay", Targets: []string{"fault-rack-0-1", "udp !{1,2}->3", "udp 3->!{1,2}"}, Detail: "client-shim +172ms", Start: at(3 * time.Second), End: at(6 * time.Second)},
		},
	}
	fail := result{
		Number: 2, Seed: 8, Schedule: s, Dir: "out/chaos/schedule-002", FaultStart: t0, Verdict: "FAIL", ExitCode: 1,
		Operations: 59876, MapVersions: [2]int64{1, 5},
		Faults: []faults.Record{
			{Kind: "kill-node", Targets: []string{"fault-leaf-1"}, Detail: "SIGKILL pid 4343", Start: at(time.Second), End: at(time.Second)},
			{Kind: "kill-shim", Targets: []string{"fault-rack-1-1"}, Detail: "SIGKILL", Start: at(5 * time.Second), End: at(5 * time.Second), Err: "no process fault-rack-1-1 in the cluster"},
		},
		Violations: []violation{{
			Key: "distcache-check:key:1", Operations: 250,
			Tail:          json.RawMessage(`[{"client":3,"op":"put","value":"w2-7"},{"client":5,"op":"get","value":"init","found":true}]`),
			History:       "out/chaos/schedule-002/check/keys/distcache-check:key:1.history.jsonl",
			Visualization: "out/chaos/schedule-002/check/keys/distcache-check:key:1.html",
		}},
		LostWrites: []lostWrite{{ReadBack: "direct", Key: "distcache-check:key:2", Detail: json.RawMessage(`{"key":"distcache-check:key:2","got":{"value":"w1-3","found":true}}`)}},
		Errors:     []string{"f1: kill-shim: no process fault-rack-1-1 in the cluster"},
	}
	rep := &report{Seed: 7, Started: t0, Finished: at(2 * time.Minute)}
	rep.add(pass)
	rep.add(fail)
	dir := t.TempDir()
	if err := rep.write(dir); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "report.txt"))
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "report.txt.golden")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("report.txt differs from %s (-update rewrites it):\n%s", golden, got)
	}
	js, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var back report
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if back.Schedules != 2 || back.Passed != 1 || back.Operations != 121110 || back.Faults != 4 ||
		back.Violations != 1 || back.LostWrites != 1 || back.Errors != 1 || back.FaultsByKind["kill-node"] != 1 {
		t.Errorf("report.json totals: %+v", back)
	}
	if !strings.Contains(string(got), "schedule 2/2 seed 8: 2 faults, 59876 ops, FAIL (1 violations, 1 lost writes, 1 errors)") {
		t.Errorf("report.txt lacks the failing schedule's progress line")
	}
}
