package fault

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/distcache/distcache/test/fault/schedule"
)

// TestSchedules runs one short schedule per fault class for a handful of
// classes, each on a fresh cluster in its own namespace, and requires the
// checker's verdict to pass.
func TestSchedules(t *testing.T) {
	requireEnv(t)
	const d = 8 * time.Second
	tests := []struct {
		class schedule.Class
		seed  uint64
	}{
		{schedule.PauseNode, 1},
		{schedule.KillRedis, 2},
		{schedule.ControlLoop, 3},
		{schedule.PartitionTwoWay, 4},
		{schedule.Delay, 5},
		{schedule.StaleClients, 6},
	}
	for i, tt := range tests {
		t.Run(string(tt.class), func(t *testing.T) {
			cfg := scheduleConfig(tt.seed, d, tt.class)
			cfg.Faults = 1
			s, err := schedule.Generate(cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("schedule:\n%s", s)
			r := runSchedule(t, i+1, s, checkOptions{duration: d}, filepath.Join(testDir(t), fmt.Sprintf("schedule-%d", i+1)))
			t.Log(r.progressLine(len(tests)))
			if !r.passed() {
				var b strings.Builder
				rep := report{}
				rep.add(r)
				rep.text(&b)
				t.Errorf("schedule %s did not pass:\n%s", tt.class, b.String())
			}
		})
	}
}
