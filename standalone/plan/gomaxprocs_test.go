package plan_test

import (
	"slices"
	"testing"

	"github.com/distcache/distcache/standalone/plan"
)

func TestMaxProcs(t *testing.T) {
	for _, tc := range []struct {
		name          string
		goProcs, cpus int
		want          int
	}{
		{"the demo on 2 CPUs", 46, 2, 1},
		{"the demo on 64 CPUs", 46, 64, 3},
		{"as many processes as CPUs", 10, 10, 2},
		{"a few processes on many CPUs", 3, 64, 43},
		{"never above the CPUs", 1, 4, 4},
		{"never below 1", 1000, 8, 1},
		{"unknown CPUs", 46, 0, 0},
		{"no process", 0, 8, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := plan.MaxProcs(tc.goProcs, tc.cpus); got != tc.want {
				t.Fatalf("MaxProcs(%d, %d) = %d, want %d", tc.goProcs, tc.cpus, got, tc.want)
			}
		})
	}
}

// TestNewSetsGOMAXPROCS lays out newCluster's 10 Go processes (4 shims,
// 4 nodes, the control loop and the gateway) on hosts of a few CPUs.
func TestNewSetsGOMAXPROCS(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cpus, set int
		want      int    // Plan.GOMAXPROCS
		wantEnv   string // of every shim, node and the control loop; "" for none
	}{
		{"2 CPUs", 2, 0, 1, "GOMAXPROCS=1"},
		{"as many CPUs as processes", 10, 0, 2, "GOMAXPROCS=2"},
		{"many CPUs", 64, 0, 13, "GOMAXPROCS=13"},
		{"inherited from the environment", 2, -1, 0, ""},
		{"given", 2, 3, 3, "GOMAXPROCS=3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := plan.New(newCluster(t), plan.Options{RunDir: t.TempDir(), Ports: sequentialPorts, CPUs: tc.cpus, GOMAXPROCS: tc.set})
			if err != nil {
				t.Fatal(err)
			}
			if p.GOMAXPROCS != tc.want {
				t.Errorf("Plan.GOMAXPROCS = %d, want %d", p.GOMAXPROCS, tc.want)
			}
			counted := 0
			for _, pr := range p.Processes {
				var want []string
				switch pr.Kind {
				case plan.Shim, plan.Node, plan.ControlLoop:
					counted++
					if tc.wantEnv != "" {
						want = []string{tc.wantEnv}
					}
				}
				if !slices.Equal(pr.Env, want) {
					t.Errorf("%s (%s): Env %q, want %q", pr.Name, pr.Kind, pr.Env, want)
				}
			}
			if counted != 9 {
				t.Fatalf("%d shims, nodes and control loops, want 9", counted)
			}
		})
	}
}
