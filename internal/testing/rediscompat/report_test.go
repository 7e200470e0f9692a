package rediscompat

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/report.md")

// TestReportGolden renders the report of the outputs in testdata and
// compares it with testdata/report.md.
func TestReportGolden(t *testing.T) {
	r := Report{
		Date:    "2026-12-06",
		Machine: "2 CPUs, Debian GNU/Linux 12 (bookworm)",
		Command: Command(RunOptions{Timeout: 300 * time.Second, Stall: 120 * time.Second, DenyTags: []string{"needs:repl", "needs:debug"}}),
		Source:  Source{Version: "5:7.0.15-1~deb12u10"},
	}
	for _, f := range []struct{ file, unit string }{
		{"string.log", "unit/type/string"}, {"hash.log", "unit/type/hash"},
		{"list.log", "unit/type/list"}, {"scripting-stalled.log", "unit/scripting"},
	} {
		out, err := os.ReadFile(filepath.Join("testdata", f.file))
		if err != nil {
			t.Fatal(err)
		}
		r.Results = append(r.Results, Parse(f.unit, out))
	}
	got := r.Markdown()
	golden := filepath.Join("testdata", "report.md")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("report differs from %s (go test ./internal/testing/rediscompat -run TestReportGolden -update):\n%s", golden, got)
	}
}
