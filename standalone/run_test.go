package standalone_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"k8s.io/utils/ptr"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/failover"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/internal/testing/redistest"
	"github.com/distcache/distcache/internal/testing/topotest"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/standalone"
	"github.com/distcache/distcache/standalone/control"
	"github.com/distcache/distcache/standalone/plan"
)

// distcacheBinary is the distcache executable built by TestMain.
var distcacheBinary string

func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "distcache-bin-")
		if err != nil {
			panic(err)
		}
		defer os.RemoveAll(dir)
		distcacheBinary = filepath.Join(dir, "distcache")
		build := exec.CommandContext(context.Background(), "go", "build", "-o", distcacheBinary, "github.com/distcache/distcache/cmd/distcache")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			panic("cannot build distcache: " + err.Error())
		}
		return m.Run()
	}())
}

// startCluster runs a 2-rack cluster (1 shard each, a 2-node spine and a
// leaf layer) of real processes and returns its control client and the
// channel Run's result arrives on.
func startCluster(t *testing.T) (*control.Client, string, <-chan error) {
	t.Helper()
	redis, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not on PATH (%v): run `make test-deps`, which installs it", err)
	}
	runDir := t.TempDir()
	ready, done := runCluster(t, testPlan(t, runDir, redis), runDir)
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("the cluster did not start: %v", err)
	}
	return control.Dial(runDir), runDir, done
}

// testPlan lays out the test cluster in runDir with redisServer as the
// storage servers' binary.
func testPlan(t *testing.T, runDir, redisServer string) *plan.Plan {
	t.Helper()
	spec := v1alpha1.CacheClusterSpec{
		Storage: v1alpha1.StorageSpec{Racks: 2, ShardsPerRack: 1},
		Layers: []v1alpha1.NamedLayer{
			{Name: "spine", CacheLayerSpec: v1alpha1.CacheLayerSpec{Nodes: ptr.To(int32(2))}},
			{Name: "leaf", CacheLayerSpec: v1alpha1.CacheLayerSpec{BoundToRacks: true}},
		},
	}
	topo := topotest.New(t, "run", spec)
	p, err := plan.New(topo, plan.Options{RunDir: runDir, Binary: distcacheBinary, RedisServer: redisServer, MapPoll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// runCluster runs p in the background: ready is closed once it is ready,
// done receives Run's result.
func runCluster(t *testing.T, p *plan.Plan, runDir string) (ready <-chan struct{}, done <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	readyc := make(chan struct{})
	donec := make(chan error, 1)
	go func() {
		donec <- standalone.Run(ctx, standalone.Config{
			Plan: p, RunDir: runDir, Policy: failover.Policy{Grace: 100 * time.Millisecond, HoldDown: 200 * time.Millisecond},
			ProbeInterval: 20 * time.Millisecond, StatusProbeInterval: 20 * time.Millisecond, Ready: func() { close(readyc) },
		})
	}()
	t.Cleanup(cancel)
	return readyc, donec
}

func process(t *testing.T, st control.Status, name string) control.Process {
	t.Helper()
	for _, p := range st.Processes {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no process %s in the status", name)
	return control.Process{}
}

func status(t *testing.T, c *control.Client) control.Status {
	t.Helper()
	st, err := c.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestFailoverAndShutdown runs a cluster, kills a cache node through the
// control API, checks the published map fails it and restores it once it
// is restarted, then shuts down and checks that no process is left.
func TestFailoverAndShutdown(t *testing.T) {
	c, runDir, done := startCluster(t)
	ctx := context.Background()
	st := status(t, c)
	if st.Phase != control.Ready || st.MapVersion != 1 || len(st.Processes) != 2+2+4+1+1 {
		t.Fatalf("started: phase %s, map v%d, %d processes; want Ready, v1, 10", st.Phase, st.MapVersion, len(st.Processes))
	}
	if gw := process(t, st, "run-gateway"); gw.Kind != string(plan.Gateway) || gw.Addr == "" || gw.MetricsAddr == "" {
		t.Fatalf("gateway %+v, want kind gateway with a Redis and a metrics address", gw)
	}
	for _, p := range st.Processes {
		if !p.Ready || p.PID == 0 || p.State != "Running" {
			t.Fatalf("process %+v not running and ready", p)
		}
	}
	victim := "run-spine-1"
	if err := c.Kill(ctx, victim); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, victim+" failed in the map", func() bool {
		return process(t, status(t, c), victim).MemberState == string(partmap.Failed)
	})
	st = status(t, c)
	if st.Phase != control.Degraded || st.MapVersion != 2 || process(t, st, victim).State != "Held" {
		t.Fatalf("after the kill: phase %s, map v%d, %s %s; want Degraded, v2, Held", st.Phase, st.MapVersion, victim, process(t, st, victim).State)
	}
	if data, err := os.ReadFile(st.MapFile); err != nil {
		t.Fatal(err)
	} else if m, err := partmap.Decode(data); err != nil || m.Version != 2 {
		t.Fatalf("map file: version %v, %v; want 2", m, err)
	}
	if err := c.Restart(ctx, victim); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, victim+" restored", func() bool {
		return process(t, status(t, c), victim).MemberState == string(partmap.Active)
	})
	st = status(t, c)
	if st.Phase != control.Ready || st.MapVersion != 3 || process(t, st, victim).Restarts != 1 || len(st.Events) != 2 {
		t.Fatalf("after the restart: phase %s, map v%d, %d restarts, %d events; want Ready, v3, 1, 2",
			st.Phase, st.MapVersion, process(t, st, victim).Restarts, len(st.Events))
	}
	if err := c.Kill(ctx, "nobody"); !errors.Is(err, control.ErrNotFound) {
		t.Fatalf("Kill(nobody) = %v, want ErrNotFound", err)
	}

	var pids []int
	for _, p := range status(t, c).Processes {
		pids = append(pids, p.PID)
	}
	if err := c.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, pid := range pids {
		if !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			t.Errorf("pid %d still exists after shutdown", pid)
		}
	}
	for _, f := range []string{control.SocketName, standalone.PIDFile} {
		if _, err := os.Stat(filepath.Join(runDir, f)); !os.IsNotExist(err) {
			t.Errorf("%s left in the run directory", f)
		}
	}
}

// TestWorkScrapesEveryProcess checks that the control API's work scrape
// covers every shim and node with the counters they export.
func TestWorkScrapesEveryProcess(t *testing.T) {
	c, _, _ := startCluster(t)
	work, err := c.Work(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, w := range work {
		kinds[w.Kind]++
	}
	if kinds["shim"] != 2 || kinds["node"] != 4 || kinds["redis"] != 0 {
		t.Fatalf("work of %v, want 2 shims and 4 nodes", kinds)
	}
}

// TestStorageReadinessFollowsRedis kills a shard's redis-server through the
// control API: the status shows it and its shim (whose health check pings
// Redis) not ready and the cluster Degraded, and Ready again once Redis is
// restarted, with the writes it had written to its append-only file before
// the kill (the default, everysec, in its directory of the run directory).
func TestStorageReadinessFollowsRedis(t *testing.T) {
	c, runDir, _ := startCluster(t)
	ctx := context.Background()
	const shim, redis = "run-rack-0-0", "run-rack-0-0-redis"
	st := status(t, c)
	if st.Persistence != "aof-everysec" {
		t.Fatalf("status persistence %q, want aof-everysec (the default)", st.Persistence)
	}
	rdb := goredis.NewClient(&goredis.Options{Addr: process(t, st, redis).Addr, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	const writes = 100
	for i := range writes {
		if err := rdb.Set(ctx, fmt.Sprint("k", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(runDir, "redis", "run-rack-0-0", "appendonlydir")); err != nil {
		t.Fatalf("no append-only file in the shard's directory: %v", err)
	}
	// With everysec Redis may postpone writing the file while a
	// background fsync runs (docs/durability.md); the kill comes once it
	// has written every write.
	poll.Eventually(t, "the writes in the append-only file", func() (bool, error) {
		return redistest.AppendOnlyWritten(process(t, st, redis).Addr)
	})
	if err := c.Kill(ctx, redis); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the shard shown not ready", func() bool {
		st := status(t, c)
		return !process(t, st, shim).Ready && !process(t, st, redis).Ready && st.Phase == control.Degraded
	})
	if err := c.Restart(ctx, redis); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the shard shown ready again", func() bool {
		st := status(t, c)
		return process(t, st, shim).Ready && process(t, st, redis).Ready && st.Phase == control.Ready
	})
	if n, err := rdb.DBSize(ctx).Result(); err != nil || n != writes {
		t.Fatalf("after the kill and restart: %d keys (%v), want the %d written", n, err, writes)
	}
}

// TestStatusAndShutdownWhileStarting runs a cluster whose storage servers
// never listen: the control API already serves while it starts, shows the
// phase Starting and the processes not started yet as Pending, and a
// shutdown request ends the start with nothing left running.
func TestStatusAndShutdownWhileStarting(t *testing.T) {
	runDir := t.TempDir()
	stuck := filepath.Join(t.TempDir(), "stuck-redis")
	if err := os.WriteFile(stuck, []byte("#!/bin/sh\nexec sleep 300\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, done := runCluster(t, testPlan(t, runDir, stuck), runDir)
	c := control.Dial(runDir)
	var st control.Status
	poll.Until(t, "the storage servers running, not ready", func() bool {
		s, err := c.Status(context.Background())
		if err != nil {
			return false // not listening yet
		}
		st = s
		return process(t, st, "run-rack-0-0-redis").State == "Running" && process(t, st, "run-rack-1-0-redis").State == "Running"
	})
	if st.Phase != control.Starting || process(t, st, "run-rack-0-0-redis").Ready || process(t, st, "run-spine-0").State != "Pending" {
		t.Fatalf("while starting: phase %s, %+v, %+v; want Starting, a Redis not ready, nodes Pending",
			st.Phase, process(t, st, "run-rack-0-0-redis"), process(t, st, "run-spine-0"))
	}
	pid := process(t, st, "run-rack-0-0-redis").PID
	if err := c.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Run after a shutdown while starting: %v, want nil", err)
	}
	if !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		t.Errorf("pid %d still exists after shutdown", pid)
	}
}

// TestControlLoopKilledAndRestarted holds the control loop down through
// the control API after it failed a node: the status still shows the map
// and the event it published (read from the run directory), the loop not
// ready and the cluster Degraded; a node that comes back meanwhile stays
// Failed, since nobody restores it; and the restarted loop resumes from the
// published map, restoring the node in version 3, not 2.
func TestControlLoopKilledAndRestarted(t *testing.T) {
	c, _, _ := startCluster(t)
	ctx := context.Background()
	const loop, victim = "run-controlloop", "run-leaf-1"
	if p := process(t, status(t, c), loop); p.Kind != string(plan.ControlLoop) || !p.Ready || p.PID == 0 {
		t.Fatalf("control loop %+v, want a ready controlloop process", p)
	}
	if err := c.Kill(ctx, victim); err != nil {
		t.Fatal(err)
	}
	// The loop writes the map, then its events file: wait for both before
	// killing it (killed in between, it loses the event line).
	poll.Until(t, victim+" failed, and the event written", func() bool {
		st := status(t, c)
		return process(t, st, victim).MemberState == string(partmap.Failed) && len(st.Events) >= 1
	})
	if err := c.Kill(ctx, loop); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the control loop held down", func() bool {
		p := process(t, status(t, c), loop)
		return p.State == "Held" && !p.Ready
	})
	if err := c.Restart(ctx, victim); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, victim+" ready again", func() bool { return process(t, status(t, c), victim).Ready })
	st := status(t, c)
	if st.Phase != control.Degraded || st.MapVersion != 2 || process(t, st, victim).MemberState != string(partmap.Failed) ||
		len(st.Events) != 1 || st.Events[0].Member != victim || st.Events[0].To != string(partmap.Failed) {
		t.Fatalf("with the loop held: phase %s, map v%d, %s %s, events %+v; want Degraded, v2, Failed, its failure",
			st.Phase, st.MapVersion, victim, process(t, st, victim).MemberState, st.Events)
	}
	if err := c.Restart(ctx, loop); err != nil {
		t.Fatal(err)
	}
	// The loop writes the map, then its events file: wait for both.
	poll.Until(t, victim+" restored by the restarted loop, and the event written", func() bool {
		st := status(t, c)
		return process(t, st, victim).MemberState == string(partmap.Active) && len(st.Events) >= 2
	})
	st = status(t, c)
	if st.MapVersion != 3 || len(st.Events) != 2 || st.Events[1].MapVersion != 3 || process(t, st, loop).Restarts != 1 {
		t.Fatalf("after the loop's restart: map v%d, events %+v, %d restarts of the loop; want v3, the failure and the restoration, 1",
			st.MapVersion, st.Events, process(t, st, loop).Restarts)
	}
	poll.Until(t, "the cluster Ready", func() bool { return status(t, c).Phase == control.Ready })
}
