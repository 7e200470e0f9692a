package fault

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/distcache/distcache/internal/faultinject"
	"github.com/distcache/distcache/internal/poll"
)

// TestZombie is the fixed scenario of fencing failed cache nodes: no stale
// read after a pause, a partition of the stale clients' view, and two
// quick remaps.
//
//  1. the checker's stale clients freeze their partition map (SIGUSR1);
//  2. cache node X is paused (SIGSTOP) past the failover grace period,
//     and 0.5–0.9 s after X another node Y of the same layer;
//  3. the control loop fails both over: two new map versions;
//  4. the workload writes (the shims acknowledge writes under the new
//     maps, which no longer name X or Y as owners);
//  5. X and Y continue (SIGCONT) with whatever they had cached, and the
//     stale clients, still routing by the first map, keep reading from
//     them for a few seconds;
//  6. the stale clients thaw (SIGUSR2) and the workload ends.
//
// The checker must find every key's history linearizable and no
// acknowledged write lost.
func TestZombie(t *testing.T) {
	requireEnv(t)
	const (
		d       = 25 * time.Second
		x, y    = "fault-spine-0", "fault-spine-1"
		writes  = 200 // acknowledged writes to wait for after the remaps
		staleOn = 3 * time.Second
	)
	ctx := context.WithoutCancel(t.Context())
	dir := testDir(t)
	file, err := filepath.Abs(clusterFile.File)
	if err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, fmt.Sprintf("%s%d-zombie", nsPrefix, os.Getpid()), file, dir)
	chk := startChecker(t, c, dir, checkOptions{duration: d, staleClients: 2, seed: 42})
	start := chk.waitReady(t)
	in := newInjector(c, chk, slog.New(slog.NewTextHandler(testWriter{t}, nil)))

	px, err := c.process(ctx, x)
	if err != nil {
		t.Fatal(err)
	}
	py, err := c.process(ctx, y)
	if err != nil {
		t.Fatal(err)
	}
	// A stale read needs a cached copy: wait until X and Y hold hot keys.
	for _, p := range []string{px.MetricsAddr, py.MetricsAddr} {
		poll.Eventually(t, "hot keys cached on "+p, func() (bool, error) {
			n, err := c.metric(ctx, p, "distcache_cache_items", nil)
			return n > 0, err
		})
	}
	v0 := c.mapVersion(ctx)

	// 1. Freeze the stale clients.
	if err := faultinject.Signal(chk.pid, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	endStale := in.rec.Begin("stale-clients", "SIGUSR1/SIGUSR2", "checker")
	// 2. Pause X, and Y 0.5–0.9 s later.
	endX := pauseNode(t, in, px.Name, px.PID)
	gap := 500*time.Millisecond + time.Duration(rand.New(rand.NewPCG(42, 0)).Int64N(int64(400*time.Millisecond)))
	sleepUntil(ctx, time.Now().Add(gap))
	endY := pauseNode(t, in, py.Name, py.PID)
	// 3. Two new map versions: X and Y failed over.
	poll.Until(t, "two new map versions", func() bool { return c.mapVersion(ctx) >= v0+2 })
	// 4. Writes under the new maps.
	shimPuts := func() float64 {
		total := 0.0
		for _, p := range c.lastStatus().Processes {
			if p.Kind == "shim" {
				n, err := c.metric(ctx, p.MetricsAddr, "distcache_requests_total", map[string]string{"op": "PUT", "result": "ok"})
				if err == nil {
					total += n
				}
			}
		}
		return total
	}
	before := shimPuts()
	poll.Until(t, "writes acknowledged after the remaps", func() bool { return shimPuts() >= before+writes })
	// 5. X and Y come back; the stale clients keep reading by the first
	// map for a while (the experiment's duration, not a synchronisation).
	endX()
	endY()
	sleepUntil(ctx, time.Now().Add(staleOn))
	// 6. Thaw.
	if err := faultinject.Signal(chk.pid, syscall.SIGUSR2); err != nil {
		t.Fatal(err)
	}
	endStale(nil)
	if elapsed := time.Since(start); elapsed > d-time.Second {
		t.Fatalf("the scenario took %v, past the end of the %v workload: the checker read back before it was over", elapsed, d)
	}
	t.Logf("gap between the pauses %v; map versions %d -> %d; faults: %+v", gap.Round(time.Millisecond), v0, c.mapVersion(ctx), in.rec.Records())

	code, err := chk.wait()
	if err != nil {
		t.Fatal(err)
	}
	v, err := chk.readVerdict()
	if err != nil {
		t.Fatalf("%v (exit %d):\n%s", err, code, readFileTail(chk.log, 4096))
	}
	res := result{ExitCode: code}
	res.fromVerdict(v)
	if code != 0 || !res.passed() {
		text, _ := os.ReadFile(filepath.Join(chk.out, "verdict.txt"))
		t.Errorf("the zombie scenario: checker exit %d, verdict %s, %d violations, %d lost writes (want exit 0, PASS, none):\n%s",
			code, v.Result, len(res.Violations), len(res.LostWrites), text)
	}
}

// pauseNode pauses a cache node and returns the function that continues
// it; both are recorded.
func pauseNode(t *testing.T, in *injector, name string, pid int) (resume func()) {
	t.Helper()
	if err := in.signal(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, name+" stopped", func() bool { return faultinject.Stopped(pid) })
	end := in.rec.Begin("pause-node", fmt.Sprintf("SIGSTOP/SIGCONT pid %d", pid), name)
	return func() {
		err := faultinject.Resume(pid)
		end(err)
		if err != nil {
			t.Fatal(err)
		}
	}
}
