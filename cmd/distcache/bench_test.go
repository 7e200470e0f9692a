package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/distcache/distcache/standalone/control"
	"github.com/distcache/distcache/workload/driver"
)

// TestBenchFailureFlags turns --fail-node, --fail-mode, --slow-delay and
// --down-for into the driver's failure, through the command's own flags.
func TestBenchFailureFlags(t *testing.T) {
	st := &control.Status{Cluster: "demo", Processes: []control.Process{
		{Name: "demo-spine-1", Kind: "node"}, {Name: "demo-rack-0-0", Kind: "shim"},
	}}
	tests := []struct {
		name    string
		args    []string
		want    *driver.Failure
		wantErr string // in the error; "" = none
	}{
		{"no failure", nil, nil, ""},
		{"kill by default", []string{"--fail-node", "demo-spine-1@8s"},
			&driver.Failure{Member: "demo-spine-1", Mode: driver.FailKill, At: 8 * time.Second, DownFor: 5 * time.Second}, ""},
		{"pause", []string{"--fail-node", "demo-spine-1@8s", "--fail-mode", "pause", "--down-for", "6s"},
			&driver.Failure{Member: "demo-spine-1", Mode: driver.FailPause, At: 8 * time.Second, DownFor: 6 * time.Second}, ""},
		{"slow with the default delay", []string{"--fail-node", "demo-spine-1@2s", "--fail-mode", "slow"},
			&driver.Failure{Member: "demo-spine-1", Mode: driver.FailSlow, Delay: 100 * time.Millisecond,
				At: 2 * time.Second, DownFor: 5 * time.Second}, ""},
		{"slow with a delay", []string{"--fail-node", "demo-spine-1@2s", "--fail-mode", "slow", "--slow-delay", "20ms"},
			&driver.Failure{Member: "demo-spine-1", Mode: driver.FailSlow, Delay: 20 * time.Millisecond,
				At: 2 * time.Second, DownFor: 5 * time.Second}, ""},
		{"unknown mode", []string{"--fail-node", "demo-spine-1@2s", "--fail-mode", "crash"}, nil, "unknown failure mode"},
		{"delay of another mode", []string{"--fail-node", "demo-spine-1@2s", "--fail-mode", "pause", "--slow-delay", "5ms"},
			nil, "--slow-delay is the delay of --fail-mode slow"},
		{"no positive delay", []string{"--fail-node", "demo-spine-1@2s", "--fail-mode", "slow", "--slow-delay", "0s"},
			nil, "must be positive"},
		{"mode without a node", []string{"--fail-mode", "pause"}, nil, "need --fail-node"},
		{"malformed node", []string{"--fail-node", "demo-spine-1", "--fail-mode", "pause"}, nil, "want NAME@T"},
		{"not a cache node", []string{"--fail-node", "demo-rack-0-0@1s"}, nil, "no cache node of that name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &benchOptions{}
			cmd := benchCommand(o)
			if err := cmd.ParseFlags(tt.args); err != nil {
				t.Fatal(err)
			}
			got, err := o.failure(st, cmd.Flags().Changed)
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
			if (got == nil) != (tt.want == nil) || (got != nil && *got != *tt.want) {
				t.Fatalf("failure %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestMapOnlyCannotFail checks that a cluster known only by its map
// refuses every failure with an error that names the flag.
func TestMapOnlyCannotFail(t *testing.T) {
	ctx := context.Background()
	var c mapOnly
	for name, call := range map[string]func() error{
		"kill":    func() error { return c.Kill(ctx, "n") },
		"restart": func() error { return c.Restart(ctx, "n") },
		"pause":   func() error { return c.Pause(ctx, "n") },
		"resume":  func() error { return c.Resume(ctx, "n") },
		"slow":    func() error { return c.Slow(ctx, "n", time.Millisecond) },
		"unslow":  func() error { return c.Unslow(ctx, "n") },
	} {
		if err := call(); !errors.Is(err, errNeedsStandalone) || !strings.HasPrefix(err.Error(), "cannot "+name+" n:") {
			t.Errorf("%s: error %v, want cannot %s n: …%v", name, err, name, errNeedsStandalone)
		}
	}
}

// TestBenchShiftFlag turns --shift-at into the driver's ShiftAt, checked
// against --duration and --modes, through the command's own flags.
func TestBenchShiftFlag(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    time.Duration
		wantErr string // in the error; "" = none
	}{
		{"no shift", nil, 0, ""},
		{"zero is none", []string{"--shift-at", "0s"}, 0, ""},
		{"within the default window", []string{"--shift-at", "5s"}, 5 * time.Second, ""},
		{"within a longer window", []string{"--duration", "30s", "--shift-at", "20s"}, 20 * time.Second, ""},
		{"at the window's end", []string{"--duration", "10s", "--shift-at", "10s"}, 0,
			"--shift-at must be less than --duration (10s)"},
		{"after the window", []string{"--duration", "5s", "--shift-at", "8s"}, 0, "must be less than --duration"},
		{"negative", []string{"--shift-at", "-1s"}, 0, "is negative"},
		{"without distcache", []string{"--modes", "nocache", "--shift-at", "2s"}, 0, "does not run it"},
		{"with a failure", []string{"--fail-node", "demo-spine-1@2s", "--shift-at", "4s"}, 4 * time.Second, ""},
	}
	st := &control.Status{Cluster: "demo", Processes: []control.Process{{Name: "demo-spine-1", Kind: "node"}}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &benchOptions{}
			cmd := benchCommand(o)
			if err := cmd.ParseFlags(tt.args); err != nil {
				t.Fatal(err)
			}
			err := o.configure(st, cmd.Flags().Changed)
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
			if err == nil && o.cfg.ShiftAt != tt.want {
				t.Fatalf("ShiftAt %v, want %v", o.cfg.ShiftAt, tt.want)
			}
		})
	}
}
