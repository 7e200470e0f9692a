package main

import (
	"path/filepath"
	"slices"
	"testing"
)

// TestDaemonArgsForwardEveryFlag checks that the background cluster gets
// every flag the user gave `distcache up`: a flag it dropped (as --bundle
// once was) silently did not apply.
func TestDaemonArgsForwardEveryFlag(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{name: "defaults", args: []string{"-f", "c.yaml"}, want: nil},
		{name: "bundle", args: []string{"-f", "c.yaml", "--bundle"}, want: []string{"--bundle=true"}},
		{name: "capacities and gateway", args: []string{"-f", "c.yaml", "--shard-capacity", "300", "--gateway=false"},
			want: []string{"--gateway=false", "--shard-capacity=300"}}, // in the order of their names
		{name: "prometheus without a value", args: []string{"-f", "c.yaml", "--prometheus"}, want: []string{"--prometheus=prometheus"}},
		{name: "cluster name", args: []string{"-f", "c.yaml", "--cluster", "demo"}, want: []string{"--cluster=demo"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := newUpCommand()
			if err := cmd.ParseFlags(append(tt.args, "--run-dir", "rel/run")); err != nil {
				t.Fatal(err)
			}
			got, err := daemonArgs(cmd, "/abs/run", []string{"c.yaml"})
			if err != nil {
				t.Fatal(err)
			}
			abs, _ := filepath.Abs("c.yaml")
			want := append(append([]string{"up", "--foreground", "--run-dir", "/abs/run"}, tt.want...), "-f", abs)
			if !slices.Equal(got, want) {
				t.Errorf("daemonArgs = %q, want %q", got, want)
			}
			for _, a := range got[2:] {
				if a == "--foreground" || a == "--run-dir=rel/run" {
					t.Errorf("daemonArgs repeats %s", a)
				}
			}
		})
	}
}
