package fault

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/standalone/control"
	"github.com/distcache/distcache/test/fault/schedule"
)

// TestInjectorEffects injects faults of several classes into a real
// cluster (no workload) and checks that each has the effect it is meant to
// have on the cluster, as its status shows: a node cut off from the
// control loop's health probes (but running) is failed over and restored
// once the partition heals; a killed shim is restarted; a paused Redis
// makes its shard not ready until it continues; a paused control loop is
// not ready, and once killed it is restarted.
func TestInjectorEffects(t *testing.T) {
	requireEnv(t)
	ctx := context.WithoutCancel(t.Context())
	file, err := filepath.Abs(clusterFile.File)
	if err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, fmt.Sprintf("%s%d-inject", nsPrefix, os.Getpid()), file, testDir(t))
	in := newInjector(c, nil, slog.New(slog.NewTextHandler(testWriter{t}, nil)))
	find := func(name string) control.Process {
		p, err := c.process(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	// inject runs f in the background; the returned channel delivers its
	// error once it is healed.
	inject := func(f schedule.Fault) <-chan error {
		done := make(chan error, 1)
		go func() { done <- in.inject(ctx, fmt.Sprintf("t%d", len(in.rec.Records())), f) }()
		return done
	}
	healed := func(done <-chan error) {
		t.Helper()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}

	t.Run("node cut off from the control loop", func(t *testing.T) {
		const node = "fault-leaf-0"
		v := c.mapVersion(ctx)
		done := inject(schedule.Fault{Class: schedule.PartitionTwoWay, Link: schedule.NodeControl, Targets: []string{node}, For: 2500 * time.Millisecond})
		poll.Until(t, node+" failed over while running", func() bool {
			p := find(node)
			return p.MemberState == "Failed" && p.State == "Running" && c.lastStatus().MapVersion > v
		})
		healed(done)
		poll.Until(t, node+" restored", func() bool { return find(node).MemberState == "Active" })
	})
	t.Run("shim killed", func(t *testing.T) {
		const shim = "fault-rack-1-0"
		before := find(shim)
		healed(inject(schedule.Fault{Class: schedule.KillShim, Targets: []string{shim}}))
		poll.Until(t, shim+" restarted and ready", func() bool {
			p := find(shim)
			return p.Restarts > before.Restarts && p.PID != before.PID && p.Ready
		})
	})
	t.Run("redis paused", func(t *testing.T) {
		const shard = "fault-rack-0-1"
		done := inject(schedule.Fault{Class: schedule.PauseRed, Targets: []string{schedule.RedisName(shard)}, For: 3 * time.Second})
		poll.Until(t, "the paused Redis's shim not ready", func() bool { return !find(shard).Ready })
		healed(done)
		poll.Until(t, "the shim ready again", func() bool { return find(shard).Ready })
	})
	t.Run("control loop paused, then killed", func(t *testing.T) {
		const loop = "fault-controlloop"
		before := find(loop)
		done := inject(schedule.Fault{Class: schedule.ControlLoop, For: 3 * time.Second})
		poll.Until(t, "the paused control loop not ready", func() bool { return !find(loop).Ready })
		healed(done)
		poll.Until(t, "the killed control loop restarted and ready", func() bool {
			p := find(loop)
			return p.Restarts > before.Restarts && p.PID != before.PID && p.Ready
		})
	})
	for _, r := range in.rec.Records() {
		if r.Err != "" {
			t.Errorf("fault %s on %v: %s", r.Kind, r.Targets, r.Err)
		}
	}
}
