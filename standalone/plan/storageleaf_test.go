package plan_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/distcache/distcache/layout"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/standalone/manifest"
	"github.com/distcache/distcache/standalone/plan"
)

// loadClusterFile reads a cluster file as `distcache up -f` does and lays
// out its CacheCluster.
func loadClusterFile(t *testing.T, path string) *layout.Cluster {
	t.Helper()
	v, err := manifest.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	b, err := manifest.Load(t.Context(), v, path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.Layout()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestNewLaysOutAStorageLeafSwitchLayer lays out the demo cluster whose
// leaf layer is a storage-leaf switch per rack (under two spine
// switches): a software switch per switch at its dataAddress with a read
// port per shard, every one programmed by the one fabric controller, and
// the map's leaf members bound to their switches' racks, each caching
// its rack's keys.
func TestNewLaysOutAStorageLeafSwitchLayer(t *testing.T) {
	c := loadClusterFile(t, filepath.Join("..", "..", "hack", "demo", "switch-leaf-cluster.yaml"))
	p, err := plan.New(c, plan.Options{RunDir: t.TempDir(), Ports: sequentialPorts})
	if err != nil {
		t.Fatal(err)
	}
	var fabric plan.Process
	switches := 0
	for _, pr := range p.Processes {
		switch pr.Kind {
		case plan.Node:
			t.Errorf("cache node %s in a cluster of switches", pr.Name)
		case plan.Switch:
			switches++
			checkFlag(t, pr.Args, "--read-ports=", "--read-ports=8")
		case plan.Fabric:
			fabric = pr
		}
	}
	if switches != 6 || fabric.Name != "leaflab-fabric" {
		t.Fatalf("%d switches, fabric controller %q; want 6 and leaflab-fabric", switches, fabric.Name)
	}
	leaf := slices.IndexFunc(p.Map.Layers, func(l partmap.Layer) bool { return l.Name == "leaf" })
	if leaf < 0 || !p.Map.Layers[leaf].Switch || !p.Map.Layers[leaf].BoundToRacks || len(p.Map.Layers[leaf].Members) != 4 {
		t.Fatalf("map's leaf layer: %+v", p.Map.Layers)
	}
	pl, err := partmap.Compile(p.Map)
	if err != nil {
		t.Fatal(err)
	}
	for r := range 4 {
		tor := fmt.Sprintf("tor-%d", r)
		sw := c.Layers[leaf].Switches[r]
		mb := p.Map.Layers[leaf].Members[r]
		if sw.Name != tor || mb.Rack != partmap.RackName(r) || mb.Address != sw.DataAddress || pl.RackMember(leaf, r) != r {
			t.Errorf("rack %d: switch %s, member %+v, rack member %d; want %s at its dataAddress", r, sw.Name, mb, pl.RackMember(leaf, r), tor)
		}
		pr, ok := p.Process(mb.Name)
		if !ok || pr.Kind != plan.Switch || pr.Layer != "leaf" || pr.Addr != sw.DataAddress {
			t.Errorf("rack %d: process %+v, want the software switch of %s", r, pr, tor)
		}
		want := fmt.Sprintf("--switch=%s=%s,device=%d,", mb.Name, sw.P4RuntimeAddress, sw.DeviceID)
		if !slices.ContainsFunc(fabric.Args, func(a string) bool { return strings.HasPrefix(a, want) }) {
			t.Errorf("the fabric controller does not program %s: no %s… in %v", tor, want, fabric.Args)
		}
	}
	for i := range 400 {
		key := fmt.Sprintf("k%d", i)
		if r, _ := pl.Shard(key); pl.Owner(leaf, key) != r {
			t.Fatalf("%s of rack %d: leaf owner %d", key, r, pl.Owner(leaf, key))
		}
	}
}
