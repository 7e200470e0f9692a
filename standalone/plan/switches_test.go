package plan_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/layout"
	"github.com/distcache/distcache/standalone/plan"
)

// clientLeafCluster is a cluster of 2 racks × 2 shards whose spine is
// two switches of a fabric that also has a client leaf, with a software
// leaf layer.
func clientLeafCluster(t *testing.T, edit func(*v1alpha1.SwitchFabricSpec)) (*layout.Cluster, error) {
	t.Helper()
	f := &v1alpha1.SwitchFabricSpec{Driver: v1alpha1.DriverStratum, Pipeline: "distcache-v1model", Switches: []v1alpha1.Switch{
		{Name: "a", DeviceID: 1, Role: v1alpha1.RoleSpine, P4RuntimeAddress: "127.0.0.1:9559", DataAddress: "127.0.0.1:7400"},
		{Name: "b", DeviceID: 2, Role: v1alpha1.RoleSpine, P4RuntimeAddress: "127.0.0.1:9560", DataAddress: "127.0.0.1:7500"},
		{Name: "c0", DeviceID: 3, Role: v1alpha1.RoleClientLeaf, P4RuntimeAddress: "127.0.0.1:9561", DataAddress: "127.0.0.1:7600"},
	}}
	if edit != nil {
		edit(f)
	}
	return switchSpineCluster("t", v1alpha1.StorageSpec{Racks: 2, ShardsPerRack: 2}, f)
}

// TestClientLeafProcesses: a client leaf of the cluster's fabric runs as
// a software switch with the client leaf program and a read port per
// shard, the fabric controller programs it, the gateway reads through it,
// and neither the map nor the control loop has it.
func TestClientLeafProcesses(t *testing.T) {
	c, err := clientLeafCluster(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.New(c, plan.Options{RunDir: t.TempDir(), Binary: "/bin/distcache", RedisServer: "/bin/redis-server", Ports: sequentialPorts})
	if err != nil {
		t.Fatal(err)
	}
	leaf, ok := p.Process("t-c0")
	if !ok || leaf.Kind != plan.ClientLeaf || leaf.Addr != "127.0.0.1:7600" || leaf.MetricsAddr == "" {
		t.Fatalf("client leaf process %+v (found %v)", leaf, ok)
	}
	for _, arg := range []string{"switch", "--program=client_leaf", "--base-port=7600", "--read-ports=4", "--p4runtime-addr=127.0.0.1:9561", "--device-id=3"} {
		if !slices.Contains(leaf.Args, arg) {
			t.Errorf("client leaf args %v lack %s", leaf.Args, arg)
		}
	}
	var fabric, gateway plan.Process
	switches := 0
	for _, pr := range p.Processes {
		switch pr.Kind {
		case plan.Fabric:
			fabric = pr
		case plan.Gateway:
			gateway = pr
		case plan.Switch:
			switches++
			if slices.Contains(pr.Args, "--program=client_leaf") {
				t.Errorf("cache switch %s runs the client leaf program", pr.Name)
			}
		}
	}
	if switches != 2 {
		t.Errorf("%d cache switches, want 2", switches)
	}
	if !slices.ContainsFunc(fabric.Args, func(a string) bool {
		return strings.HasPrefix(a, "--client-leaf=t-c0=127.0.0.1:9561,data=127.0.0.1:7600,device=3,gnmi=")
	}) {
		t.Errorf("fabric args %v do not program the client leaf", fabric.Args)
	}
	if !slices.Contains(gateway.Args, "--client-leaf=127.0.0.1:7600") {
		t.Errorf("gateway args %v do not read through the client leaf", gateway.Args)
	}
	if _, _, ok := p.Map.Member("t-c0"); ok {
		t.Error("the client leaf is a member of the map")
	}
	for _, l := range p.Map.Layers {
		for _, m := range l.Members {
			if m.Address == "127.0.0.1:7600" {
				t.Errorf("member %s at the client leaf's address", m.Name)
			}
		}
	}
}

// TestCheckRefusesAClientLeafWithoutP4Runtime: standalone mode programs
// every client leaf over P4Runtime.
func TestCheckRefusesAClientLeafWithoutP4Runtime(t *testing.T) {
	c, err := clientLeafCluster(t, func(f *v1alpha1.SwitchFabricSpec) { f.Switches[2].P4RuntimeAddress = "" })
	if err != nil {
		t.Fatal(err)
	}
	if err := plan.Check(c, &plan.Options{}); !errors.Is(err, plan.ErrUnsupported) || !strings.Contains(err.Error(), "switch c0") {
		t.Errorf("error %v, want ErrUnsupported naming c0", err)
	}
}
