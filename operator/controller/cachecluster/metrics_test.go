package cachecluster

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/distcache/distcache/placement/partmap"
)

// TestMetricsPublished records a cluster's published map with a failed
// member, its reconciles and its remap, then forgets the deleted cluster:
// every series of the cluster is reported, then gone, and another
// cluster's stay.
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
	m.reconciled("ns", "shop", nil)
	m.reconciled("ns", "shop", errors.New("conflict"))
	m.reconciled("ns", "other", nil)
	m.remapped("ns", "shop", string(partmap.Failed))
	want := `
# HELP distcache_operator_map_version Published partition map version per cluster.
# TYPE distcache_operator_map_version gauge
distcache_operator_map_version{cluster="shop",namespace="ns"} 2
# HELP distcache_operator_members Cache members in the published partition map per cluster, by state (Active, Fenced, Failed).
# TYPE distcache_operator_members gauge
distcache_operator_members{cluster="shop",namespace="ns",state="Active"} 2
distcache_operator_members{cluster="shop",namespace="ns",state="Failed"} 1
distcache_operator_members{cluster="shop",namespace="ns",state="Fenced"} 0
# HELP distcache_operator_reconciles_total CacheCluster reconciles per cluster by result.
# TYPE distcache_operator_reconciles_total counter
distcache_operator_reconciles_total{cluster="other",namespace="ns",result="error"} 0
distcache_operator_reconciles_total{cluster="other",namespace="ns",result="success"} 1
distcache_operator_reconciles_total{cluster="shop",namespace="ns",result="error"} 1
distcache_operator_reconciles_total{cluster="shop",namespace="ns",result="success"} 1
# HELP distcache_operator_remaps_total Member state changes the operator published per cluster, by the state entered (Fenced, Failed, Active).
# TYPE distcache_operator_remaps_total counter
distcache_operator_remaps_total{cluster="shop",namespace="ns",to="Active"} 0
distcache_operator_remaps_total{cluster="shop",namespace="ns",to="Failed"} 1
distcache_operator_remaps_total{cluster="shop",namespace="ns",to="Fenced"} 0
`
	names := []string{"distcache_operator_map_version", "distcache_operator_members",
		"distcache_operator_reconciles_total", "distcache_operator_remaps_total"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	m.forget("ns", "shop")
	if n, err := testutil.GatherAndCount(reg, names...); err != nil || n != 2 {
		t.Fatalf("%d series left after forgetting shop, want other's two reconcile series only (%v)", n, err)
	}
}
