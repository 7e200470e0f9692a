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
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/test/fault/schedule"
	"github.com/distcache/distcache/workload"
	"github.com/distcache/distcache/workload/checker"
)

// TestStorageLeafSwitchFailover fails a storage-leaf switch over under a
// checked workload on the cluster of switches (switchLeafClusterFile) and
// follows its rack's keys:
//
//  1. once rack 0's switch holds a slot for a key of rack 0, it is paused
//     (SIGSTOP);
//  2. the control loop fails it: the map places every key of rack 0 on the
//     other storage-leaf switch, and that switch gives one a slot;
//  3. it continues (SIGCONT); the control loop restores it: the map gives
//     rack 0 back to it, the other switch releases every key of rack 0,
//     and rack 0's switch gives one a slot again;
//  4. the workload ends: every key's history must be linearizable and no
//     acknowledged write lost.
//
// Slots are read from the switches' cache_lookup tables over P4Runtime.
func TestStorageLeafSwitchFailover(t *testing.T) {
	requireEnv(t)
	const (
		// The workload ends with the scenario, within bound: at rate it
		// cannot reach its operation bound first.
		bound = 2 * time.Minute
		rate  = 2000
	)
	ctx := context.WithoutCancel(t.Context())
	dir := testDir(t)
	file, err := filepath.Abs(switchLeafClusterFile.File)
	if err != nil {
		t.Fatal(err)
	}
	tors := storageLeafSwitches(t, file)
	c := startCluster(t, fmt.Sprintf("%s%d-storageleaf", nsPrefix, os.Getpid()), file, dir)
	chk := startChecker(t, c, dir, checkOptions{duration: bound, rate: rate, maxOps: 2 * rate * int(bound/time.Second), seed: 7})
	chk.waitReady(t)
	in := newInjector(c, chk, slog.New(slog.NewTextHandler(testWriter{t}, nil)))

	p := readPlacement(t, c)
	leaf := layerIndex(t, p.Map(), "leaf")
	var rack0 []string // the checker's keys stored in rack 0
	for id := range uint64(32) {
		key := checker.DefaultKeyPrefix + workload.Key(id)
		if r, _ := p.Shard(key); r == 0 {
			rack0 = append(rack0, key)
		}
	}
	if len(rack0) == 0 {
		t.Fatal("no key of the checker's is stored in rack 0")
	}
	tor0, tor1 := tors[0], tors[1]
	// slotted counts the keys of rack 0 sw holds a slot for.
	slotted := func(sw storageLeaf) (int, error) {
		held, err := cachedDigests(ctx, c, sw)
		n := 0
		for _, key := range rack0 {
			if held[digestOf(key)] {
				n++
			}
		}
		return n, err
	}
	hasSlots := func(what string, sw storageLeaf, want func(int) bool) {
		t.Helper()
		var n int
		poll.Eventually(t, what, func() (bool, error) {
			var err error
			n, err = slotted(sw)
			return err == nil && want(n), fmt.Errorf("%s holds slots for %d keys of rack 0: %v", sw.member, n, err)
		})
		t.Logf("%s: %s holds slots for %d of rack 0's %d keys", what, sw.member, n, len(rack0))
	}
	some := func(n int) bool { return n > 0 }
	hasSlots("rack 0's switch caching a key of rack 0", tor0, some)
	if n, err := slotted(tor1); err != nil || n != 0 {
		t.Fatalf("rack 1's switch holds slots for %d keys of rack 0 (%v)", n, err)
	}

	// 1–2. Paused, failed: rack 0's keys on rack 1's switch.
	pr, err := c.process(ctx, tor0.member)
	if err != nil {
		t.Fatal(err)
	}
	resume := pauseNode(t, in, pr.Name, pr.PID)
	poll.Eventually(t, "rack 0's switch failed, its rack's keys on rack 1's switch", func() (bool, error) {
		p, err := c.process(ctx, tor0.member)
		if err != nil || p.MemberState != string(partmap.Failed) {
			return false, err
		}
		return rackOwnedBy(t, c, leaf, rack0, tor1.member)
	})
	hasSlots("rack 1's switch caching a key of rack 0", tor1, some)

	// 3. Continued, restored: rack 0's keys back on rack 0's switch.
	resume()
	poll.Eventually(t, "rack 0's switch restored, its rack's keys back", func() (bool, error) {
		p, err := c.process(ctx, tor0.member)
		if err != nil || p.MemberState != string(partmap.Active) {
			return false, err
		}
		return rackOwnedBy(t, c, leaf, rack0, tor0.member)
	})
	hasSlots("rack 1's switch releasing every key of rack 0", tor1, func(n int) bool { return n == 0 })
	hasSlots("rack 0's switch caching a key of rack 0 again", tor0, some)

	// 4. The verdict.
	chk.endWorkload(t)
	code, err := chk.wait()
	if err != nil {
		t.Fatal(err)
	}
	res := result{ExitCode: code}
	v, err := chk.readVerdict()
	if err != nil {
		t.Fatal(err)
	}
	res.fromVerdict(v)
	t.Logf("%s: %d operations, map versions up to %d", res.Verdict, res.Operations, c.mapVersion(ctx))
	if !res.passed() {
		t.Fatalf("the checker's verdict: exit %d, %s, %d violations, %d lost writes\n%s",
			code, res.Verdict, len(res.Violations), len(res.LostWrites), readFileTail(chk.log, 4096))
	}
}

// TestSwitchLeafSchedules runs one short schedule drawn with the switch
// faults (pause and kill of a switch, a network fault on it) aimed at the
// storage-leaf switches of the cluster of switches, and requires the
// checker's verdict to pass. Seed 32 draws a cut between rack 1's switch
// and a shim of rack 0 (the shim's invalidations to it are lost) and,
// while it lasts, rack 0's switch paused past the grace period.
func TestSwitchLeafSchedules(t *testing.T) {
	requireEnv(t)
	const d = 8 * time.Second
	leaves := switchLeafClusterFile
	leaves.Nodes = []string{"swleaf-leaf-0", "swleaf-leaf-1"}
	cfg := scheduleConfig(32, d, schedule.PauseNode, schedule.KillNode, schedule.PartitionTwoWay)
	cfg.Clusters, cfg.Faults = []schedule.Cluster{leaves}, 2
	s, err := schedule.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("schedule:\n%s", s)
	r := runSchedule(t, 101, s, checkOptions{duration: d}, filepath.Join(testDir(t), "schedule-leaf"))
	t.Log(r.progressLine(1))
	if !r.passed() {
		t.Errorf("the schedule on the storage-leaf switches did not pass:\n%s", reportText(r))
	}
}
