package standalone

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/distcache/distcache/internal/testing/errtest"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/standalone/control"
	"github.com/distcache/distcache/standalone/faults"
	"github.com/distcache/distcache/standalone/plan"
	"github.com/distcache/distcache/standalone/supervisor"
)

// backendWithout returns a cluster backend of procs that runs nothing.
func backendWithout(procs ...plan.Process) *cluster {
	return &cluster{
		cfg:   Config{Plan: &plan.Plan{Processes: procs}, Logger: slog.New(slog.DiscardHandler)},
		ready: map[string]bool{}, samples: map[string]sample{}, loads: map[string]float64{},
		slowed: map[string]time.Duration{}, delays: map[string]*faults.Delay{},
	}
}

// TestSlowRefusals covers the slow requests refused before anything is
// installed; the cluster is stopping, so a valid request is refused too
// and the host's firewall is never touched.
func TestSlowRefusals(t *testing.T) {
	c := backendWithout(
		plan.Process{Name: "n", Kind: plan.Node, Addr: "127.0.0.1:4000"},
		plan.Process{Name: "s", Kind: plan.Shim, Addr: "127.0.0.1:4001"},
		plan.Process{Name: "r", Kind: plan.Redis, Addr: "127.0.0.1:6379"},
		plan.Process{Name: "loop", Kind: plan.ControlLoop},
		plan.Process{Name: "bad", Kind: plan.Node, Addr: "nowhere"},
	)
	c.unslowAll() // the cluster is stopping
	tests := []struct {
		name    string
		call    func() error
		wantErr error  // nil: none; errtest.ErrAny: any
		wantMsg string // in the error
	}{
		{"unknown", func() error { return c.Slow("x", time.Second) }, control.ErrNotFound, "cannot slow x"},
		{"redis", func() error { return c.Slow("r", time.Second) }, control.ErrBadRequest, "a redis process has no data-plane socket"},
		{"control loop", func() error { return c.Slow("loop", time.Second) }, control.ErrBadRequest, "no data-plane socket"},
		{"no port", func() error { return c.Slow("bad", time.Second) }, errtest.ErrAny, "no data-plane port"},
		{"no delay", func() error { return c.Slow("n", 0) }, control.ErrBadRequest, "not positive"},
		{"stopping", func() error { return c.Slow("s", time.Second) }, errtest.ErrAny, "cannot slow s: the cluster is stopping"},
		{"unslow unknown", func() error { return c.Unslow("x") }, control.ErrNotFound, "cannot unslow x"},
		{"unslow, not slowed", func() error { return c.Unslow("n") }, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			errtest.Check(t, err, tt.wantErr)
			if err != nil && !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("error %q, want it to say %q", err, tt.wantMsg)
			}
		})
	}
	if len(c.delays) != 0 || len(c.slowed) != 0 {
		t.Fatalf("delays %v, slowed %v after refusals, want none", c.delays, c.slowed)
	}
	if port, err := c.dataPlanePort("s"); err != nil || port != 4001 || slowFault(port) != "slow_4001" {
		t.Fatalf("data-plane port of s: %d, %v (fault %s), want 4001", port, err, slowFault(port))
	}
}

// TestPauseThroughTheBackend pauses and resumes a supervised process
// through the control API's backend and checks what the status shows.
func TestPauseThroughTheBackend(t *testing.T) {
	dir := t.TempDir()
	c := backendWithout(plan.Process{Name: "p", Kind: plan.Shim})
	c.sup = supervisor.New(supervisor.Config{})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c.sup.Stop(ctx)
	})
	if err := c.sup.Start(supervisor.Spec{Name: "p", Path: "/bin/sh", Args: []string{"-c", "exec sleep 300"},
		LogFile: filepath.Join(dir, "p.log")}); err != nil {
		t.Fatal(err)
	}
	state := func() string { return c.processes(nil)[0].State }
	if err := c.Pause("p"); err != nil {
		t.Fatal(err)
	}
	if got := state(); got != string(supervisor.Paused) {
		t.Fatalf("state %q after Pause, want Paused", got)
	}
	if err := c.Pause("nobody"); !errors.Is(err, control.ErrNotFound) {
		t.Fatalf("Pause(nobody) = %v, want ErrNotFound", err)
	}
	if err := c.Resume("p"); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the process running", func() bool { return state() == string(supervisor.Running) })
}
