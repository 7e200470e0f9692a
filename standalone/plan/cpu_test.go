package plan_test

import (
	"slices"
	"testing"

	"github.com/distcache/distcache/standalone/plan"
)

// With ServerCPU every storage server (Redis and shim) and every cache
// node gets a group of its own, the Go ones a GOMAXPROCS of the quota
// rounded up; other processes get none.
func TestServerCPUGroups(t *testing.T) {
	for _, tc := range []struct {
		cpus    float64
		wantEnv string
	}{{0.05, "GOMAXPROCS=1"}, {1.5, "GOMAXPROCS=2"}} {
		p, err := plan.New(newCluster(t), plan.Options{RunDir: t.TempDir(), Ports: sequentialPorts, CPUs: 64, ServerCPU: tc.cpus})
		if err != nil {
			t.Fatal(err)
		}
		if p.ServerCPU != tc.cpus {
			t.Errorf("Plan.ServerCPU = %g, want %g", p.ServerCPU, tc.cpus)
		}
		groups := map[string][]plan.Kind{}
		for _, pr := range p.Processes {
			switch pr.Kind {
			case plan.Redis, plan.Shim, plan.Node:
				if pr.CPUGroup == "" {
					t.Errorf("%s (%s): no CPU group", pr.Name, pr.Kind)
				}
				groups[pr.CPUGroup] = append(groups[pr.CPUGroup], pr.Kind)
				if pr.Kind != plan.Redis && !slices.Equal(pr.Env, []string{tc.wantEnv}) {
					t.Errorf("%s: Env %q, want %q", pr.Name, pr.Env, tc.wantEnv)
				}
			default:
				if pr.CPUGroup != "" {
					t.Errorf("%s (%s): CPU group %q, want none", pr.Name, pr.Kind, pr.CPUGroup)
				}
			}
		}
		shards, nodes := 0, 0
		for g, kinds := range groups {
			switch {
			case slices.Equal(kinds, []plan.Kind{plan.Redis, plan.Shim}):
				shards++
			case slices.Equal(kinds, []plan.Kind{plan.Node}):
				nodes++
			default:
				t.Errorf("group %s holds %v", g, kinds)
			}
		}
		if shards != 4 || nodes != 4 {
			t.Errorf("%d storage servers and %d cache nodes, want 4 and 4", shards, nodes)
		}
	}
	p, err := plan.New(newCluster(t), plan.Options{RunDir: t.TempDir(), Ports: sequentialPorts})
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range p.Processes {
		if pr.CPUGroup != "" {
			t.Errorf("without ServerCPU, %s has CPU group %q", pr.Name, pr.CPUGroup)
		}
	}
}
