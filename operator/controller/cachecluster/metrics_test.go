package cachecluster

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/distcache/distcache/placement/partmap"
)

// TestMetricsPublished records a cluster's published map with a failed
// member, then forgets the deleted cluster: the version and the members by
// state are reported, then gone.
func TestMetricsPublished(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	pm, err := partmap.Build(partmap.Spec{Cluster: "shop", Racks: 1, ShardsPerRack: 1,
		Layers: []partmap.LayerSpec{{Name: "spine", Nodes: 3}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pm, _, err = pm.WithState(pm.Layers[0].Members[1].Name, partmap.Failed)
	if err != nil {
		t.Fatal(err)
	}
	m.published("ns", "shop", pm)
	want := `
# HELP distcache_operator_map_version Published partition map version per cluster.
# TYPE distcache_operator_map_version gauge
distcache_operator_map_version{cluster="shop",namespace="ns"} 2
# HELP distcache_operator_members Cache members in the published partition map per cluster, by state (Active, Fenced, Failed).
# TYPE distcache_operator_members gauge
distcache_operator_members{cluster="shop",namespace="ns",state="Active"} 2
distcache_operator_members{cluster="shop",namespace="ns",state="Failed"} 1
distcache_operator_members{cluster="shop",namespace="ns",state="Fenced"} 0
`
	names := []string{"distcache_operator_map_version", "distcache_operator_members"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	m.forget("ns", "shop")
	if n, err := testutil.GatherAndCount(reg, names...); err != nil || n != 0 {
		t.Fatalf("%d series of a deleted cluster left (%v)", n, err)
	}
}
