package fault

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/distcache/distcache/test/fault/schedule"
)

// chaosDuration is the timed workload of each schedule of the long run.
const chaosDuration = 20 * time.Second

// TestChaosLocal runs -schedules random schedules from -seed (schedule i
// has seed+i), each on the suite's cluster or (without -bundle) its twin
// with a switch spine or the cluster of switches with storage-leaf
// switches, and writes report.txt and report.json to -report, with a
// progress line per schedule. make chaos-local runs it.
func TestChaosLocal(t *testing.T) {
	if *flagSchedules <= 0 {
		t.Skip("skipping the long fault-injection run: give -schedules=N (make chaos-local SCHEDULES=N SEED=S)")
	}
	requireEnv(t)
	dir := *flagReport
	if dir == "" {
		dir = t.TempDir()
	}
	n := *flagSchedules
	rep := &report{Seed: *flagSeed, Started: time.Now()}
	for i := range n {
		seed := *flagSeed + uint64(i)
		cfg := scheduleConfig(seed, chaosDuration)
		if !*flagBundle { // bundles do not go through switches (docs/switches.md)
			// The long run also faults a switch spine, and storage-leaf switches.
			cfg.Clusters = append(cfg.Clusters, switchClusterFile, switchLeafClusterFile)
		}
		s, err := schedule.Generate(cfg)
		if err != nil {
			t.Fatal(err)
		}
		r := result{Number: i + 1, Seed: seed, Schedule: s, Errors: []string{"the run of the schedule stopped early; see the test log"}}
		t.Run(fmt.Sprintf("schedule-%03d", i+1), func(t *testing.T) {
			t.Logf("schedule %d/%d:\n%s", i+1, n, s)
			r = runSchedule(t, i+1, s, checkOptions{duration: chaosDuration}, filepath.Join(dir, fmt.Sprintf("schedule-%03d", i+1)))
			if !r.passed() {
				t.Errorf("%s", r.progressLine(n))
			}
		})
		rep.add(r)
		rep.Finished = time.Now()
		if err := rep.write(dir); err != nil {
			t.Fatal(err)
		}
		t.Log(r.progressLine(n))
	}
	t.Logf("%d of %d schedules passed, %d operations, %d faults, %d violations, %d lost writes; report in %s",
		rep.Passed, rep.Schedules, rep.Operations, rep.Faults, rep.Violations, rep.LostWrites, filepath.Join(dir, "report.txt"))
}
