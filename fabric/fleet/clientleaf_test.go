package fleet_test

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/distcache/distcache/fabric/cacheswitch"
	"github.com/distcache/distcache/fabric/fleet"
	"github.com/distcache/distcache/fabric/pipeline"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/internal/testing/switchtest"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/softswitch"
	pipelines "github.com/distcache/distcache/stratum_pipelines"
)

// spineAt places the spine's only member at addr.
type spineAt string

func (spineAt) ShardAddress(r, s int) string           { return fmt.Sprintf("127.0.0.1:%d", 7000+10*r+s) }
func (a spineAt) MemberAddress(_ string, _ int) string { return string(a) }

// TestFleetProgramsAClientLeaf: a fleet runs a cache switch and a client
// leaf side by side from one map file: the leaf gets the client leaf
// program and the map's routes, the switch the cache switch program and
// its lease; both report their sessions, each with its own counters.
func TestFleetProgramsAClientLeaf(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	spine, leaf := switchtest.StartTarget(t, 1, 1), switchtest.StartClientLeaf(t, 1, 2)
	m, err := partmap.Build(partmap.Spec{Cluster: "lab", Racks: 1, ShardsPerRack: 1, Addresses: spineAt(spine.Addr().String()),
		Layers: []partmap.LayerSpec{{Name: "spine", Nodes: 1, Switch: true}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	builtin, err := pipeline.Builtin("distcache-v1model")
	if err != nil {
		t.Fatal(err)
	}
	leafInfo, err := pipelines.ProgramP4Info(softswitch.ClientLeafProgram)
	if err != nil {
		t.Fatal(err)
	}
	f, runners := fleet.Build([]fleet.Switch{
		{Member: "lab-spine-0", P4Runtime: spine.P4Runtime, DeviceID: 1},
		{Member: "lab-cl-0", P4Runtime: leaf.P4Runtime, DeviceID: 2, ClientLeaf: leaf.Addr()},
	}, fleet.Config{Pipeline: builtin, Controller: cacheswitch.Config{Lease: time.Second}, ClientLeafInfo: leafInfo, Leader: true, Logger: quiet})
	followMap(t, f, m)
	for _, r := range runners {
		<-r.Programmed()
	}
	poll.Until(t, "the leaf's read port of shard 0 installed", func() bool {
		es, err := leaf.Switch().Read([]*p4v1.Entity{{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{}}}})
		return err == nil && len(es) > 1 // client_read_port, spine_owner and the defaults
	})
	poll.Eventually(t, "every switch renewed", func() (bool, error) { return f.Healthy() == nil, f.Healthy() })
	if info, _, ok := leaf.Switch().Pipeline(); !ok {
		t.Fatal("the leaf runs no pipeline")
	} else if _, ok := pipelines.ObjectID(info, "spine_owner"); !ok {
		t.Fatal("the leaf runs another pipeline than the client leaf's")
	}

	reg := prometheus.NewRegistry()
	if err := reg.Register(f.Collector(nil)); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP distcache_fabric_switch_programmed 1 while the controller is the switch's primary and runs it with the pipeline it pushed or found.
# TYPE distcache_fabric_switch_programmed gauge
distcache_fabric_switch_programmed{switch_member="lab-cl-0"} 1
distcache_fabric_switch_programmed{switch_member="lab-spine-0"} 1
# HELP distcache_fabric_client_leaf_apply_errors_total Map reads the client leaf could not be programmed with.
# TYPE distcache_fabric_client_leaf_apply_errors_total counter
distcache_fabric_client_leaf_apply_errors_total{switch_member="lab-cl-0"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "distcache_fabric_switch_programmed", "distcache_fabric_client_leaf_apply_errors_total"); err != nil {
		t.Error(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, s := range mf.GetMetric() {
			member := s.GetLabel()[0].GetValue()
			leafSeries := strings.HasPrefix(mf.GetName(), "distcache_fabric_client_leaf_")
			cacheSeries := mf.GetName() == "distcache_fabric_lease_renewals_total"
			if (leafSeries && member != "lab-cl-0") || (cacheSeries && member != "lab-spine-0") {
				t.Errorf("%s of %s", mf.GetName(), member)
			}
			if mf.GetName() == "distcache_fabric_client_leaf_applies_total" && s.GetCounter().GetValue() == 0 {
				t.Error("no map read applied to the client leaf")
			}
		}
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("metrics lint: %v %v", problems, err)
	}
}
