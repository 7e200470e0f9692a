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

	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/standalone/control"
	"github.com/distcache/distcache/standalone/faults"
	"github.com/distcache/distcache/workload/checker"
)

// TestZombie is the fixed scenario of fencing failed cache nodes: no stale
// read after a pause, a partition of the stale clients' view, and two
// quick remaps.
//
//  1. the checker's stale clients freeze their partition map (SIGUSR1);
//  2. cache node X is paused (SIGSTOP) past the failover grace period,
//     and 0.5–0.9 s after X another node Y of the same layer; the storage
//     shims' datagrams to X and Y are dropped from then until the stale
//     clients thaw, so the best-effort invalidations the shims keep
//     sending them never arrive (without the cut they would wait in the
//     paused nodes' socket buffers and invalidate the copies first thing
//     after SIGCONT);
//  3. the control loop fences and fails both over: new map versions;
//  4. the workload writes, and the shims acknowledge writes of X's and Y's
//     keys without them: they have released them (their serving leases
//     ran out since they were fenced);
//  5. X and Y continue (SIGCONT) with whatever they had cached and the map
//     from before the pause, which they keep: the map file is hidden just
//     before, as a node's map source can fail or lag (a kubelet that has
//     not refreshed a mounted ConfigMap), until the stale period ends or
//     the control loop publishes again; the stale clients, still routing
//     by the first map and trying a node that timed out again after
//     100 ms, read from them;
//  6. the stale clients thaw (SIGUSR2), and a while later the workload
//     ends (SIGTERM): the checker reads every key back and checks.
//
// The checker must find every key's history linearizable and no
// acknowledged write lost. Without fencing — a node that serves its copies
// whatever its lease, shims that stop waiting for a failed node at once —
// the stale clients read values older than acknowledged writes from X or Y
// in step 5, and the check fails.
//
// The second run stops the control loop first (killed through the
// control API, held down until the end): nothing fences or fails X and Y,
// so step 3 is skipped, and in step 4 the shims release them by the
// leases they granted alone.
func TestZombie(t *testing.T) {
	requireEnv(t)
	t.Run("control loop running", func(t *testing.T) { runZombie(t, true) })
	t.Run("control loop stopped", func(t *testing.T) { runZombie(t, false) })
}

// runZombie runs the zombie scenario, with the control loop running or
// stopped before the pauses.
func runZombie(t *testing.T, controlLoop bool) {
	const (
		// The checker's workload ends with the scenario, within bound:
		// at rate, it cannot reach its operation bound first.
		bound    = 2 * time.Minute
		rate     = 10000
		x, y     = "fault-spine-0", "fault-spine-1"
		writes   = 200 // acknowledged writes to wait for after the remaps
		released = 20  // invalidations of X and Y the shims did not wait for
		staleOn  = 3 * time.Second
	)
	ctx := context.WithoutCancel(t.Context())
	dir := testDir(t)
	file, err := filepath.Abs("testdata/zombie.yaml")
	if err != nil {
		t.Fatal(err)
	}
	name := "zombie"
	if !controlLoop {
		name = "zombie-nocp"
	}
	c := startCluster(t, fmt.Sprintf("%s%d-%s", nsPrefix, os.Getpid(), name), file, dir, "--map-poll", "1s")
	// Clients try a node that timed out again after 100 ms, so the stale
	// clients read from X and Y as soon as they continue, before the nodes
	// have read the newer maps (with the default 2 s they might skip them
	// until then, and the scenario would prove nothing).
	chk := startChecker(t, c, dir, checkOptions{duration: bound, rate: rate, maxOps: 2 * rate * int(bound/time.Second), staleClients: 2, seed: 42, failBackoff: 100 * time.Millisecond})
	chk.waitReady(t)
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
	if !controlLoop {
		stopControlLoop(t, c, in)
	}

	// 1. Freeze the stale clients.
	if err := faults.Signal(chk.pid, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	endStale := in.rec.Begin("stale-clients", "SIGUSR1/SIGUSR2", "checker")
	// 2. Pause X, and Y 0.5–0.9 s later.
	endX := pauseNode(t, in, px.Name, px.PID)
	gap := 500*time.Millisecond + time.Duration(rand.New(rand.NewPCG(42, 0)).Int64N(int64(400*time.Millisecond)))
	sleepUntil(ctx, time.Now().Add(gap))
	endY := pauseNode(t, in, py.Name, py.PID)
	heal := cutShimsFrom(t, c, in, px, py)
	// 3. X and Y fenced and failed: new map versions.
	poll.Until(t, "X and Y failed", func() bool {
		if !controlLoop {
			return true // nothing fences them
		}
		failed := 0
		for _, name := range []string{x, y} {
			if p, err := c.process(ctx, name); err == nil && p.MemberState == "Failed" {
				failed++
			}
		}
		return failed == 2
	})
	// 4. Writes the shims acknowledge without waiting for X or Y.
	shimSum := func(name string, labels map[string]string) float64 {
		total := 0.0
		for _, p := range c.lastStatus().Processes {
			if p.Kind == "shim" {
				if n, err := c.metric(ctx, p.MetricsAddr, name, labels); err == nil {
					total += n
				}
			}
		}
		return total
	}
	without := func() float64 {
		return shimSum("distcache_coherence_invalidations_total", map[string]string{"result": "released"}) +
			shimSum("distcache_coherence_invalidations_total", map[string]string{"result": "best_effort"})
	}
	puts := func() float64 {
		return shimSum("distcache_requests_total", map[string]string{"op": "PUT", "result": "ok"})
	}
	before := puts()
	poll.Until(t, "writes of X's and Y's keys acknowledged without them", func() bool {
		return without() >= released && puts() >= before+writes
	})
	// 5. X and Y come back; the stale clients keep reading by the first
	// map for a while (the experiment's duration, not a synchronisation).
	unhide := hideMap(t, c)
	endX()
	endY()
	sleepUntil(ctx, time.Now().Add(staleOn))
	unhide()
	// 6. Thaw, and let the shims reach X and Y again.
	if err := faults.Signal(chk.pid, syscall.SIGUSR2); err != nil {
		t.Fatal(err)
	}
	heal()
	endStale(nil)
	// 7. The workload runs on a while with X and Y healed (the
	// experiment's duration), then ends.
	sleepUntil(ctx, time.Now().Add(staleOn))
	chk.endWorkload(t)
	t.Logf("gap between the pauses %v; map versions %d -> %d; faults: %+v", gap.Round(time.Millisecond), v0, c.mapVersion(ctx), in.rec.Records())
	if v := c.mapVersion(ctx); !controlLoop && v != v0 {
		t.Errorf("map version %d -> %d with the control loop stopped: want no change", v0, v)
	}

	code, err := chk.wait()
	if err != nil {
		t.Fatal(err)
	}
	v, err := chk.readVerdict()
	if err != nil {
		t.Fatalf("%v (exit %d):\n%s", err, code, readFileTail(chk.log, 4096))
	}
	t.Logf("checker: %s; workload %v", v.Summary(), v.Elapsed.Round(time.Millisecond))
	if v.EndedBy != checker.EndedOnRequest {
		t.Fatalf("the checker's workload ended by %s after %v, before the scenario did", v.EndedBy, v.Elapsed)
	}
	res := result{ExitCode: code}
	res.fromVerdict(v)
	if code != 0 || !res.passed() {
		text, _ := os.ReadFile(filepath.Join(chk.out, "verdict.txt"))
		t.Errorf("the zombie scenario: checker exit %d, verdict %s, %d violations, %d lost writes (want exit 0, PASS, none):\n%s",
			code, v.Result, len(res.Violations), len(res.LostWrites), text)
	}
}

// hideMap moves the cluster's map file aside, so that every process that
// reads it keeps the map it has, and returns the function that puts it
// back unless the control loop has published a newer one meanwhile.
func hideMap(t *testing.T, c *cluster) (unhide func()) {
	t.Helper()
	path := filepath.Join(c.runDir, "map.json")
	hidden := path + ".hidden"
	if err := os.Rename(path, hidden); err != nil {
		t.Fatal(err)
	}
	return func() {
		if _, err := os.Stat(path); err == nil {
			_ = os.Remove(hidden) // a newer version was published meanwhile
			return
		}
		if err := os.Rename(hidden, path); err != nil {
			t.Fatal(err)
		}
	}
}

// cutShimsFrom drops every datagram from the storage shims to the nodes
// until the returned function heals the cut; both are recorded.
func cutShimsFrom(t *testing.T, c *cluster, in *injector, nodes ...control.Process) (heal func()) {
	t.Helper()
	var shims, dst []uint16
	var names []string
	for _, p := range c.lastStatus().Processes {
		if p.Kind == "shim" {
			port, err := portOf(p.Addr)
			if err != nil {
				t.Fatal(err)
			}
			shims = append(shims, port)
		}
	}
	for _, n := range nodes {
		port, err := portOf(n.Addr)
		if err != nil {
			t.Fatal(err)
		}
		dst, names = append(dst, port), append(names, n.Name)
	}
	fl := faults.Flow{Proto: faults.UDP, Src: faults.Ports{List: shims}, Dst: faults.Ports{List: dst}}
	rules, err := faults.Drop(c.ns, "zombie_cut", 1, fl)
	if err != nil {
		t.Fatal(err)
	}
	end := in.rec.Begin("partition-one-way", "shims -> "+fl.Dst.String(), names...)
	return func() {
		err := rules.Remove()
		end(err)
		if err != nil {
			t.Fatal(err)
		}
	}
}

// pauseNode pauses a cache node and returns the function that continues
// it; both are recorded.
func pauseNode(t *testing.T, in *injector, name string, pid int) (resume func()) {
	t.Helper()
	if err := in.signal(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, name+" stopped", func() bool { return faults.Stopped(pid) })
	end := in.rec.Begin("pause-node", fmt.Sprintf("SIGSTOP/SIGCONT pid %d", pid), name)
	return func() {
		err := faults.Resume(pid)
		end(err)
		if err != nil {
			t.Fatal(err)
		}
	}
}

// stopControlLoop kills the cluster's control loop through the control
// API, which holds it down, and restarts it when the test ends; both are
// recorded.
func stopControlLoop(t *testing.T, c *cluster, in *injector) {
	t.Helper()
	var loop string
	for _, p := range c.lastStatus().Processes {
		if p.Kind == controlLoopKind {
			loop = p.Name
		}
	}
	if loop == "" {
		t.Fatal("no control loop in the cluster's status")
	}
	ctx := context.WithoutCancel(t.Context())
	if err := c.ctl.Kill(ctx, loop); err != nil {
		t.Fatal(err)
	}
	end := in.rec.Begin("kill-controlloop", "control API, held down", loop)
	t.Cleanup(func() {
		err := c.ctl.Restart(ctx, loop)
		end(err)
		if err != nil {
			t.Error(err)
		}
	})
}
