package fault

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/distcache/distcache/test/fault/schedule"
)

// Timing of a schedule's run.
const (
	// faultStart is when the first fault may start, from the start of the
	// timed workload.
	faultStart = time.Second
	// healMargin separates the last heal from the end of the timed
	// workload, after which the checker reads every key back.
	healMargin = 2 * time.Second
	// grace is the failover grace period of testdata/cluster.yaml.
	grace = time.Second
)

// clusterFile is the suite's cluster file and its processes' names.
var clusterFile = schedule.Cluster{
	File:   "testdata/cluster.yaml",
	Nodes:  []string{"fault-spine-0", "fault-spine-1", "fault-spine-2", "fault-leaf-0", "fault-leaf-1"},
	Shards: []string{"fault-rack-0-0", "fault-rack-0-1", "fault-rack-1-0", "fault-rack-1-1"},
}

// switchClusterFile is the cluster with a switch spine (two software
// switches) and its processes' names. Process faults on a switch kill or
// pause its software switch; a network fault on it hits its coherence
// port only (its read ports are others).
var switchClusterFile = schedule.Cluster{
	File:   "testdata/switch-cluster.yaml",
	Nodes:  []string{"swfault-spine-0", "swfault-spine-1", "swfault-leaf-0", "swfault-leaf-1"},
	Shards: []string{"swfault-rack-0-0", "swfault-rack-0-1", "swfault-rack-1-0", "swfault-rack-1-1"},
}

// switchLeafClusterFile is the cluster whose cache layers are both
// switches: a spine of two software switches and a storage-leaf switch per
// rack (swleaf-leaf-0 serves rack 0, swleaf-leaf-1 rack 1). Faults on its
// switches are made as on switchClusterFile's.
var switchLeafClusterFile = schedule.Cluster{
	File:   "testdata/switch-leaf-cluster.yaml",
	Nodes:  []string{"swleaf-spine-0", "swleaf-spine-1", "swleaf-leaf-0", "swleaf-leaf-1"},
	Shards: []string{"swleaf-rack-0-0", "swleaf-rack-0-1", "swleaf-rack-1-0", "swleaf-rack-1-1"},
}

// scheduleConfig is the generator's configuration for a workload of
// duration d.
func scheduleConfig(seed uint64, d time.Duration, classes ...schedule.Class) schedule.Config {
	return schedule.Config{
		Seed: seed, Clusters: []schedule.Cluster{clusterFile}, Classes: classes,
		Start: faultStart, HealBy: d - healMargin, Grace: grace,
	}
}

// runSchedule runs schedule s as schedule number n: a cluster in a fresh
// namespace, the checker (o, with 2 stale clients and the schedule's seed),
// the faults, the verdict, and the teardown (down, nothing left running,
// namespace gone). Its files go to dir.
func runSchedule(t *testing.T, n int, s schedule.Schedule, o checkOptions, dir string) result {
	t.Helper()
	res := result{Number: n, Seed: s.Seed, Schedule: s, Dir: dir}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	nsName := fmt.Sprintf("%s%d-%d", nsPrefix, os.Getpid(), n)
	file, err := filepath.Abs(s.Cluster.File)
	if err != nil {
		t.Fatal(err)
	}
	var upArgs []string // startCluster's default
	if *flagBundle || *flagCopies {
		upArgs = []string{"--map-poll", "100ms"}
	}
	if *flagBundle {
		upArgs = append(upArgs, "--bundle")
	}
	if *flagDirect {
		upArgs = append(upArgs, "--direct-reads")
	}
	if *flagDirectW {
		upArgs = append(upArgs, "--direct-writes")
	}
	if *flagCopies {
		// Capacities near the checker's rates, so that its hottest keys'
		// copies are decided, and change with the faults.
		upArgs = append(upArgs, "--adaptive-copies", "--copies-shard-capacity", "500", "--copies-node-capacity", "5000")
	}
	c := startCluster(t, nsName, file, dir, upArgs...)
	first := c.lastStatus().MapVersion
	o.staleClients, o.seed = 2, s.Seed
	if *flagDirectW {
		o.keys = 1024 // more than the caches hold: some keys are written at Redis, others through the shims
	}
	d := o.duration
	chk := startChecker(t, c, dir, o)
	start := chk.waitReady(t)
	log := slog.New(slog.NewTextHandler(testWriter{t}, nil))
	in := newInjector(c, chk, log)
	if err := in.run(context.WithoutCancel(t.Context()), start, s); err != nil {
		res.Errors = append(res.Errors, err.Error())
	}
	if healed := time.Since(start); healed > d {
		res.Errors = append(res.Errors, fmt.Sprintf("faults healed %v after the workload started, after its end (%v)", healed.Round(time.Millisecond), d))
	}
	res.Faults = in.rec.Records()
	res.FaultStart = start
	code, err := chk.wait()
	res.ExitCode = code
	if err != nil {
		res.Errors = append(res.Errors, err.Error())
	}
	if v, err := chk.readVerdict(); err != nil {
		res.Errors = append(res.Errors, err.Error())
	} else {
		res.fromVerdict(v)
	}
	_, _ = c.status(context.WithoutCancel(t.Context()))
	res.MapVersions = [2]int64{first, c.lastStatus().MapVersion}
	for _, err := range c.teardown() {
		res.Errors = append(res.Errors, "teardown: "+err.Error())
	}
	if code != 0 && code != 1 {
		res.Errors = append(res.Errors, fmt.Sprintf("distcache check exited with %d:\n%s", code, readFileTail(chk.log, 2048)))
	}
	return res
}

// testWriter sends log lines to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
