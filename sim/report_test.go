package sim

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateReport = flag.Bool("update-report", false, "rewrite the golden files of the report tests")

// golden compares got with testdata/report/name, rewriting the file under
// -update-report.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "report", name)
	if *updateReport {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update-report to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}

// sweepResults builds results of every strategy at each x for series name,
// with throughput f(strategy index, x).
func sweepResults(name string, xs []float64, f func(int, float64) float64) []Result {
	var out []Result
	for _, x := range xs {
		for i, s := range Strategies {
			out = append(out, Result{Experiment: name, X: x, Strategy: s, Throughput: f(i, x),
				Bottleneck: "server " + string(s)})
		}
	}
	return out
}

func TestWriteCSV(t *testing.T) {
	results := []Result{
		{Experiment: "skew", X: 0, Strategy: NoCache, Throughput: 64},
		{Experiment: "skew", X: 0.99, Strategy: DistCache, Throughput: 123.45678},
		{Experiment: "writes/zipf-0.9,10-per-node", X: 0.05, Strategy: Optimal, Throughput: 1.0 / 3},
		{Experiment: "scale", X: 1024, Strategy: Replication, Throughput: 32768},
	}
	var b bytes.Buffer
	if err := WriteCSV(&b, results); err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(b.String(), "\n"); first != "experiment,x,strategy,normalized_throughput" {
		t.Errorf("header %q", first)
	}
	golden(t, "results.csv", b.Bytes())
}

func TestWriteMarkdownTwoSeries(t *testing.T) {
	exp := Experiment{Name: "writes", Figure: "10", XLabel: "write ratio"}
	xs := []float64{0, 0.5, 1}
	results := append(
		sweepResults("writes/zipf-0.9,10-per-node", xs, func(i int, x float64) float64 { return float64(i+1) * 10 * (1 - x) }),
		sweepResults("writes/zipf-0.99,100-per-node", xs, func(i int, x float64) float64 { return float64(i+1) * 20 * (1 - x/2) })...)
	// A strategy missing at one x shows as a dash.
	results = results[:len(results)-1]
	var b bytes.Buffer
	if err := WriteMarkdown(&b, exp, results); err != nil {
		t.Fatal(err)
	}
	golden(t, "writes.md", b.Bytes())
}

func TestWriteMarkdownFailure(t *testing.T) {
	exp := Experiment{Name: "failure", Figure: "11", XLabel: "time (telemetry windows)"}
	var results []Result
	for step, thr := range []float64{100, 100, 62.5, 62.5, 99.96} {
		state := "map v1, 0 spine nodes down"
		if step >= 2 {
			state = "map v2, 1 spine nodes down"
		}
		results = append(results, Result{Experiment: "failure", X: float64(step), Strategy: DistCache,
			Throughput: thr, Bottleneck: state})
	}
	var b bytes.Buffer
	if err := WriteMarkdown(&b, exp, results); err != nil {
		t.Fatal(err)
	}
	golden(t, "failure.md", b.Bytes())
}

// isPNG reports whether the file at path is a non-empty PNG.
func isPNG(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("%s is not a PNG (%d bytes)", path, len(data))
	}
}

func TestWritePlot(t *testing.T) {
	writes := append(
		sweepResults("writes/zipf-0.9,10-per-node", []float64{0, 0.5, 1}, func(i int, x float64) float64 { return float64(i+1) * (1 - x) }),
		sweepResults("writes/zipf-0.99,100-per-node", []float64{0, 0.5, 1}, func(i int, x float64) float64 { return float64(i+1) * 100 * (1 - x) })...)
	var longSeries []Result
	for step := range 50 {
		longSeries = append(longSeries, Result{Experiment: "failure", X: float64(step), Strategy: "custom",
			Throughput: float64(100 - step%7)})
	}
	cases := []struct {
		name    string
		exp     Experiment
		results []Result
	}{
		{"linear", Experiment{Name: "skew", Figure: "9a", XLabel: "Zipf skew"},
			sweepResults("skew", []float64{0, 0.9, 0.99, 1.2}, func(i int, x float64) float64 { return float64(i+1) * (1 + x) })},
		{"log-log", Experiment{Name: "scale", Figure: "9c", XLabel: "storage racks"},
			sweepResults("scale", []float64{4, 64, 1024}, func(i int, x float64) float64 { return float64(i) * x * 32 })},
		{"writes-with-zero", Experiment{Name: "writes", Figure: "10", XLabel: "write ratio"}, writes},
		{"empty", Experiment{Name: "empty"}, nil},
		// A single x and a single zero value on log axes.
		{"single-zero-point", Experiment{Name: "scale", Figure: "9c"},
			[]Result{{Experiment: "scale", X: 4, Strategy: NoCache, Throughput: 0}}},
		// A long series, drawn without glyphs, of a strategy outside Strategies.
		{"long-series", Experiment{Name: "failure", Figure: "11"}, longSeries},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), c.exp.Name+".png")
			if err := WritePlot(path, c.exp, c.results); err != nil {
				t.Fatal(err)
			}
			isPNG(t, path)
		})
	}
}

func TestWriteReport(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out", "nested")
	exp := Experiment{Name: "skew", Figure: "9a", XLabel: "Zipf skew"}
	results := sweepResults("skew", []float64{0, 0.99}, func(i int, x float64) float64 { return float64(i+1) * (1 + x) })
	if err := WriteReport(dir, exp, results); err != nil {
		t.Fatal(err)
	}
	for _, ext := range []string{".csv", ".md", ".png"} {
		info, err := os.Stat(filepath.Join(dir, "skew"+ext))
		if err != nil {
			t.Fatal(err)
		}
		if info.Size() == 0 {
			t.Errorf("skew%s is empty", ext)
		}
	}
	isPNG(t, filepath.Join(dir, "skew.png"))
}

func TestWriteReportError(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	err := WriteReport(filepath.Join(file, "dir"), Experiment{Name: "skew"}, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "cannot write report: ") {
		t.Errorf("got error %v, want one starting with \"cannot write report: \"", err)
	}
}
