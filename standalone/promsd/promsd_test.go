package promsd_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/internal/testing/topotest"
	"github.com/distcache/distcache/standalone/plan"
	"github.com/distcache/distcache/standalone/promsd"
)

// TestWriteListsEveryMetricsAddress lays out a cluster of one rack with one
// shard, one spine node and a leaf, writes its targets and reads them back
// as Prometheus would: one group per process with /metrics (not the Redis
// server; the gateway too), each labelled with what it is, and the
// supervisor last.
func TestWriteListsEveryMetricsAddress(t *testing.T) {
	spec := v1alpha1.CacheClusterSpec{
		Storage: v1alpha1.StorageSpec{Racks: 1, ShardsPerRack: 1},
		Layers: []v1alpha1.NamedLayer{
			{Name: "spine", CacheLayerSpec: v1alpha1.CacheLayerSpec{Nodes: ptr.To(int32(1))}},
			{Name: "leaf", CacheLayerSpec: v1alpha1.CacheLayerSpec{BoundToRacks: true}},
		},
	}
	c := topotest.New(t, "t", spec)
	p, err := plan.New(c, plan.Options{RunDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	metricsAddr := map[string]string{}
	for _, pr := range p.Processes {
		metricsAddr[pr.Name] = pr.MetricsAddr
	}
	if err := promsd.Write(p); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(p.TargetsFile)
	if err != nil {
		t.Fatal(err)
	}
	var got []promsd.Group
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	group := func(addr string, labels ...string) promsd.Group {
		g := promsd.Group{Targets: []string{addr}, Labels: map[string]string{"cluster": "t"}}
		for i := 0; i < len(labels); i += 2 {
			g.Labels[labels[i]] = labels[i+1]
		}
		return g
	}
	want := []promsd.Group{
		group(metricsAddr["t-rack-0-0"], "kind", "shim", "process", "t-rack-0-0", "shard", "t-rack-0-0"),
		group(metricsAddr["t-spine-0"], "kind", "node", "process", "t-spine-0", "layer", "spine"),
		group(metricsAddr["t-leaf-0"], "kind", "node", "process", "t-leaf-0", "layer", "leaf"),
		group(metricsAddr["t-controlloop"], "kind", "controlloop", "process", "t-controlloop"),
		group(metricsAddr["t-gateway"], "kind", "gateway", "process", "t-gateway"),
		group(p.MetricsAddr, "kind", "supervisor", "process", "t-supervisor"),
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("targets:\n%s\nwant %+v", raw, want)
	}
	if filepath.Dir(p.TargetsFile) != filepath.Dir(p.MapFile) {
		t.Errorf("targets file %s not in the run directory", p.TargetsFile)
	}
}
