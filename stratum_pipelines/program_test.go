package pipelines_test

import (
	"testing"

	pipelines "github.com/distcache/distcache/stratum_pipelines"
)

// TestClientLeafPipelines: every pipeline a SwitchFabric may name has a
// client leaf program for the same target, whose P4Info loads and names
// the tables the client leaf controller writes.
func TestClientLeafPipelines(t *testing.T) {
	for name, program := range pipelines.Pipelines {
		leaf, ok := pipelines.ClientLeafPipelines[name]
		if !ok {
			t.Errorf("pipeline %s has no client leaf program", name)
			continue
		}
		if pipelines.Arch(leaf) != pipelines.Arch(program) {
			t.Errorf("pipeline %s: client leaf %s is for %s, its cache switch %s for %s", name, leaf, pipelines.Arch(leaf), program, pipelines.Arch(program))
		}
		info, err := pipelines.ProgramP4Info(leaf)
		if err != nil {
			t.Fatalf("pipeline %s: %v", name, err)
		}
		for _, obj := range []string{"client_read_port", "spine_owner", "shard_leaf", "choices"} {
			if _, ok := pipelines.ObjectID(info, obj); !ok {
				t.Errorf("pipeline %s: client leaf %s has no %s", name, leaf, obj)
			}
		}
	}
	if len(pipelines.ClientLeafPipelines) != len(pipelines.Pipelines) {
		t.Errorf("%d client leaf programs for %d pipelines", len(pipelines.ClientLeafPipelines), len(pipelines.Pipelines))
	}
}
