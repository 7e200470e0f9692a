package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/distcache/distcache/workload/driver"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}

// fixedReport is an emulated run of both modes with a failure and a lost
// write.
func fixedReport() *driver.Report {
	predicted := 3.1
	timeline := func(rates ...float64) []driver.Point {
		var out []driver.Point
		for i, r := range rates {
			out = append(out, driver.Point{T: 0.5 * float64(i+1), OpsPerSecond: r, Retries: uint64(i % 2)})
		}
		return out
	}
	return &driver.Report{
		Config: driver.ReportConfig{Cluster: "demo", MapVersion: 1, Keys: 100000, Skew: 0.99, WriteRatio: 0.05,
			ValueSize: 128, Concurrency: 64, Clients: 4, DurationSeconds: 3, Preload: 1000, WarmupSeconds: 3,
			ServerCapacity: 200, Emulated: true, Seed: 1},
		Modes: []driver.ModeResult{
			{Mode: driver.NoCache, NormalizedThroughput: 1.25, MaxUtilization: 0.7, Bottleneck: "demo-rack-0-1",
				Imbalance: 2.8, HitRatio: map[string]float64{"spine": 0, "leaf": 0, "all": 0},
				P50Seconds: 0.0012, P99Seconds: 0.0154, P999Seconds: 0.1043, Ops: 525, Reads: 500, Writes: 25,
				NotFound: 3, OfferedRate: 180, AchievedRate: 175, RateSource: "probe",
				Probe:   &driver.ProbeResult{OfferedRate: 160, AchievedRate: 159.5, MaxUtilization: 0.62, Seconds: 3},
				Seconds: 3, Timeline: timeline(170, 176, 178, 175, 174, 177),
				Nodes: []driver.Load{
					{Name: "demo-spine-0", Layer: "spine", Capacity: 800},
					{Name: "demo-leaf-0", Layer: "leaf", Capacity: 800},
				},
				Shards: []driver.Load{
					{Name: "demo-rack-0-0", Units: 150, UnitsPerSecond: 50, Capacity: 200, Utilization: 0.25},
					{Name: "demo-rack-0-1", Units: 420, UnitsPerSecond: 140, Capacity: 200, Utilization: 0.7},
				},
				Coherence: 0},
			{Mode: driver.DistCache, NormalizedThroughput: 3.4, Predicted: &predicted, MaxUtilization: 0.71,
				Bottleneck: "demo-rack-0-1", Imbalance: 1.3, NodeImbalance: 1.1,
				HitRatio:   map[string]float64{"spine": 0.41, "leaf": 0.32, "all": 0.73},
				P50Seconds: 0.0009, P99Seconds: 0.012, P999Seconds: 1.5, Ops: 1500, Reads: 1425, Writes: 75,
				Errors: 4, OfferedRate: 500, AchievedRate: 480, Late: 12, RateSource: "probe", Seconds: 3,
				Timeline: timeline(490, 495, 300, 310, 480, 490), Retries: 9, Timeouts: 4, Coherence: 150,
				Nodes: []driver.Load{
					{Name: "demo-spine-0", Layer: "spine", Units: 1200, UnitsPerSecond: 400, Capacity: 800, Utilization: 0.5},
					{Name: "demo-leaf-0", Layer: "leaf", Units: 900, UnitsPerSecond: 300, Capacity: 800, Utilization: 0.375},
				},
				Shards: []driver.Load{
					{Name: "demo-rack-0-0", Units: 300, UnitsPerSecond: 100, Capacity: 200, Utilization: 0.5},
					{Name: "demo-rack-0-1", Units: 426, UnitsPerSecond: 142, Capacity: 200, Utilization: 0.71},
				}},
		},
		LostWrites: 1, CheckedKeys: 1060, UncheckedKeys: 2,
		LostExamples: []driver.LostWrite{{Key: "key:42", Want: "distcache|key:42|17", Got: `"planted"`, Unknown: 1, Source: "storage"}},
		Failure: &driver.FailureResult{Member: "demo-spine-0", Mode: driver.FailKill, Killed: true, KilledAt: 1, Restarted: true, RestartedAt: 2,
			Before: 492.5, Down: 305, After: 485,
			MapVersions: []driver.MapVersion{{Version: 2, At: 1.25}, {Version: 3, At: 2.5}},
			Interval:    0.5, Worst: 300, WorstAt: 1.5, WorstRatio: 300 / 492.5, MapChangeAfter: 0.25, RecoveredAfter: 1},
	}
}

// failedReport is fixedReport with a failure of mode m (and delay, for a
// slow one).
func failedReport(m driver.FailureMode, delay time.Duration) *driver.Report {
	r := fixedReport()
	r.Failure.Mode, r.Failure.DelaySeconds = m, delay.Seconds()
	return r
}

// unlimitedReport is a NoCache run without emulated capacities.
func unlimitedReport() *driver.Report {
	return &driver.Report{
		Config: driver.ReportConfig{Keys: 200, Skew: 0, ValueSize: 32, Concurrency: 8, Clients: 2,
			DurationSeconds: 10, Count: 300, Rate: 400, Preload: 50},
		Modes: []driver.ModeResult{{Mode: driver.NoCache, Imbalance: 1.02,
			HitRatio: map[string]float64{"all": 0}, P50Seconds: 0.0004, P99Seconds: 0.002, P999Seconds: 0.003,
			Ops: 300, Reads: 300, OfferedRate: 400, AchievedRate: 399.5, RateSource: "config", Seconds: 0.75,
			Shards: []driver.Load{{Name: "a", Units: 150, UnitsPerSecond: 200}, {Name: "b", Units: 150, UnitsPerSecond: 199}}}},
		CheckedKeys: 50,
	}
}

// mapOnlyReport is a run that knew only the map (bench --map-configmap):
// no member reported its load.
func mapOnlyReport() *driver.Report {
	r := unlimitedReport()
	hit := 0.9
	m := &r.Modes[0]
	m.Mode, m.Shards = driver.DistCache, nil
	m.Timeline = []driver.Point{{T: 0.25, OpsPerSecond: 400, HitRatio: &hit}, {T: 0.5, OpsPerSecond: 400, HitRatio: &hit}}
	return r
}

func TestWriteText(t *testing.T) {
	tests := []struct {
		name   string
		report *driver.Report
		want   []string // also in the text
	}{
		{"emulated.txt.golden", fixedReport(), []string{"EMULATED", "1 LOST WRITE", "2.72×", "kill", "3 at 2.50s",
			"demo-spine-0 killed at 1.00s, restarted at 2.00s"}},
		{"paused.txt.golden", failedReport(driver.FailPause, 0), []string{
			"demo-spine-0 paused (SIGSTOP) at 1.00s, resumed at 2.00s", "before the pause", "* after the pause"}},
		{"slowed.txt.golden", failedReport(driver.FailSlow, 100*time.Millisecond), []string{
			"demo-spine-0 slowed (every data-plane datagram it sends delayed 100ms) at 1.00s, restored at 2.00s",
			"from the slowdown to the end of the slowdown"}},
		{"unlimited.txt.golden", unlimitedReport(), []string{"not emulated", "no lost writes", "200/s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteText(&b, tt.report); err != nil {
				t.Fatal(err)
			}
			for _, s := range tt.want {
				if !strings.Contains(b.String(), s) {
					t.Errorf("text lacks %q", s)
				}
			}
			golden(t, tt.name, b.Bytes())
		})
	}
}

// TestFailureText covers the failure's first line for every mode, and a
// failure the window ended before.
func TestFailureText(t *testing.T) {
	tests := []struct {
		name string
		f    driver.FailureResult
		want string
	}{
		{"kill of an old report (no mode)", driver.FailureResult{Member: "n", Killed: true, KilledAt: 8.15, Restarted: true, RestartedAt: 14},
			"failure (distcache window): n killed at 8.15s, restarted at 14.00s\n"},
		{"kill", driver.FailureResult{Member: "n", Mode: driver.FailKill, Killed: true, KilledAt: 8.15},
			"failure (distcache window): n killed at 8.15s\n"},
		{"pause", driver.FailureResult{Member: "n", Mode: driver.FailPause, Killed: true, KilledAt: 8.15, Restarted: true, RestartedAt: 14},
			"failure (distcache window): n paused (SIGSTOP) at 8.15s, resumed at 14.00s\n"},
		{"slow", driver.FailureResult{Member: "n", Mode: driver.FailSlow, DelaySeconds: 0.0025, Killed: true, KilledAt: 8.15,
			Restarted: true, RestartedAt: 14},
			"failure (distcache window): n slowed (every data-plane datagram it sends delayed 2.5ms) at 8.15s, restored at 14.00s\n"},
		{"pause not injected", driver.FailureResult{Member: "n", Mode: driver.FailPause},
			"failure: n was not paused: the measured window ended first\n"},
		{"slow not injected", driver.FailureResult{Member: "n", Mode: driver.FailSlow, DelaySeconds: 0.1},
			"failure: n was not slowed: the measured window ended first\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			writeFailure(&b, &driver.Report{Failure: &tt.f})
			if first, _, _ := strings.Cut(b.String(), "\n"); first+"\n" != tt.want {
				t.Fatalf("first line %q, want %q", first+"\n", tt.want)
			}
		})
	}
}

// TestFailureJSONCompatible checks that a report written before failure
// modes (no mode) reads as a kill, and that a slow failure's mode and
// delay are written next to the fields a kill always had.
func TestFailureJSONCompatible(t *testing.T) {
	var old driver.FailureResult
	if err := json.Unmarshal([]byte(`{"member":"n","killed":true,"killed_at":1,"restarted":true,"restarted_at":2}`), &old); err != nil {
		t.Fatal(err)
	}
	if old.EffectiveMode() != driver.FailKill || !old.Killed || old.RestartedAt != 2 {
		t.Fatalf("old report read as %+v (mode %q), want a kill", old, old.EffectiveMode())
	}
	b, err := json.Marshal(failedReport(driver.FailSlow, 100*time.Millisecond).Failure)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"mode":"slow"`, `"delay_seconds":0.1`, `"killed":true`, `"killed_at":1`, `"restarted_at":2`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON %s lacks %s", b, want)
		}
	}
}

func TestWriteJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "report.json")
	if err := WriteJSON(path, fixedReport()); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "report.json.golden", got)
}

func TestWritePNG(t *testing.T) {
	tests := []struct {
		name   string
		report *driver.Report
	}{
		{"emulated with failure", fixedReport()},
		{"unlimited", unlimitedReport()},
		{"no modes", &driver.Report{}},
		{"no member loads", mapOnlyReport()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "report.png")
			if err := WritePNG(path, tt.report); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			cfg, err := png.DecodeConfig(f)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Width == 0 || cfg.Height == 0 {
				t.Errorf("image %d × %d", cfg.Width, cfg.Height)
			}
		})
	}
}

func TestProgressBarNotTerminal(t *testing.T) {
	var b bytes.Buffer
	update := ProgressBar(&b) // a buffer is no terminal: lines, no \r
	steps := []struct {
		p     driver.Progress
		lines int // lines written so far
	}{
		{driver.Progress{Phase: "preload", Done: 10, Total: 100, Elapsed: time.Second}, 1},
		{driver.Progress{Phase: "preload", Done: 50, Total: 100, Elapsed: 2 * time.Second}, 1}, // too soon for another
		{driver.Progress{Phase: "preload", Done: 100, Total: 100, Elapsed: 3 * time.Second}, 2},
		{driver.Progress{Mode: driver.NoCache, Phase: "measure", Done: 5, Total: 1000, Elapsed: time.Second,
			Duration: 10 * time.Second, Rate: 5}, 3},
		{driver.Progress{Mode: driver.NoCache, Phase: "measure", Done: 900, Total: 1000, Elapsed: 10 * time.Second,
			Duration: 10 * time.Second, Rate: 90}, 4},
	}
	for i, s := range steps {
		update(s.p)
		if got := strings.Count(b.String(), "\n"); got != s.lines {
			t.Fatalf("after update %d: %d lines, want %d:\n%s", i, got, s.lines, b.String())
		}
	}
	if strings.Contains(b.String(), "\r") {
		t.Errorf("carriage return written to a non-terminal:\n%q", b.String())
	}
	last := strings.Split(strings.TrimSpace(b.String()), "\n")[3]
	if !strings.HasPrefix(last, "nocache measure") || !strings.Contains(last, "100%") || !strings.Contains(last, "900/1000") {
		t.Errorf("last line %q", last)
	}
}

func TestProgressTerminalLine(t *testing.T) {
	pb := &progressBar{w: &bytes.Buffer{}, tty: true}
	pb.update(driver.Progress{Phase: "check", Done: 1, Total: 4, Elapsed: time.Second})
	pb.update(driver.Progress{Phase: "check", Done: 4, Total: 4, Elapsed: 2 * time.Second})
	out := pb.w.(*bytes.Buffer).String()
	want := "\r" + progressLine("check", driver.Progress{Done: 1, Total: 4, Elapsed: time.Second}, true) +
		"\r" + progressLine("check", driver.Progress{Done: 4, Total: 4, Elapsed: 2 * time.Second}, true) + "\n"
	if out != want {
		t.Errorf("terminal output\n%q, want\n%q", out, want)
	}
}
