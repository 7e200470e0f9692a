package promsd_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/distcache/distcache/operator/api/v1alpha1"
	"github.com/distcache/distcache/standalone/plan"
	"github.com/distcache/distcache/standalone/promsd"
	"github.com/distcache/distcache/topology"
)

// TestWriteListsEveryMetricsAddress lays out a cluster of one rack with one
// shard, one spine node and a leaf, writes its targets and reads them back
// as Prometheus would: one group per process with /metrics (not the Redis
// server), each labelled with what it is, and the supervisor last.
func TestWriteListsEveryMetricsAddress(t *testing.T) {
	spec := v1alpha1.CacheClusterSpec{
		Storage: v1alpha1.StorageSpec{Racks: 1, ShardsPerRack: 1},
		Layers: []v1alpha1.NamedLayer{
			{Name: "spine", CacheLayerSpec: v1alpha1.CacheLayerSpec{Nodes: ptr.To(int32(1))}},
			{Name: "leaf", CacheLayerSpec: v1alpha1.CacheLayerSpec{BoundToRacks: true}},
		},
	}
	layers, err := topology.ResolveLayers(&spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := topology.New("t", spec, layers)
	if err != nil {
		t.Fatal(err)
	}
	ports := func(_ string, tcp, udp int) ([]int, []int, error) {
		var t, u []int
		for i := range tcp {
			t = append(t, 20000+i)
		}
		for i := range udp {
			u = append(u, 30000+i)
		}
		return t, u, nil
	}
	p, err := plan.New(c, plan.Options{RunDir: t.TempDir(), Ports: ports})
	if err != nil {
		t.Fatal(err)
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
	// Ports in plan order: the supervisor's, then the Redis server's, then
	// the shim's, the nodes' and the control loop's metrics.
	want := []promsd.Group{
		group("127.0.0.1:20002", "kind", "shim", "process", "t-rack-0-0", "shard", "t-rack-0-0"),
		group("127.0.0.1:20003", "kind", "node", "process", "t-spine-0", "layer", "spine"),
		group("127.0.0.1:20004", "kind", "node", "process", "t-leaf-0", "layer", "leaf"),
		group("127.0.0.1:20005", "kind", "controlloop", "process", "t-controlloop"),
		group("127.0.0.1:20000", "kind", "supervisor", "process", "t-supervisor"),
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("targets:\n%s\nwant %+v", raw, want)
	}
	if filepath.Dir(p.TargetsFile) != filepath.Dir(p.MapFile) {
		t.Errorf("targets file %s not in the run directory", p.TargetsFile)
	}
}
