package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCommand(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

// TestSimWritesReports runs a tiny skew experiment end to end through the
// command line and checks the three outputs exist and the CSV has the
// promised header.
func TestSimWritesReports(t *testing.T) {
	dir := t.TempDir()
	out, err := runCommand(t, "sim", "--experiment", "skew", "--out", dir,
		"--spines", "4", "--racks", "4", "--servers-per-rack", "4", "--cache-per-node", "5",
		"--keys", "100000", "--queries", "50000", "--warmup", "5000")
	if err != nil {
		t.Fatalf("sim failed: %v\n%s", err, out)
	}
	for _, ext := range []string{".csv", ".png", ".md"} {
		if st, err := os.Stat(filepath.Join(dir, "skew"+ext)); err != nil || st.Size() == 0 {
			t.Errorf("skew%s missing or empty: %v", ext, err)
		}
	}
	csv, _ := os.ReadFile(filepath.Join(dir, "skew.csv"))
	if !strings.HasPrefix(string(csv), "experiment,x,strategy,normalized_throughput\n") {
		t.Errorf("CSV header: %q", strings.SplitN(string(csv), "\n", 2)[0])
	}
}

func TestSimRejectsBadInput(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"sim", "--experiment", "nope"}, "unknown experiment"},
		{[]string{"sim", "--write-ratio", "2"}, "write ratio"},
		{[]string{"sim", "--racks", "0"}, "at least one spine, rack"},
	}
	for _, tc := range tests {
		_, err := runCommand(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}
