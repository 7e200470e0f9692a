package layout_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/layout"
)

func rack(r int32) *int32 { return &r }

// fabric is a fabric of two spine switches and a storage-leaf switch per
// rack, changed by edit.
func fabric(edit func(*v1alpha1.SwitchFabricSpec)) layout.FabricGetter {
	f := &v1alpha1.SwitchFabricSpec{Driver: v1alpha1.DriverStratum, Pipeline: "distcache-v1model", Switches: []v1alpha1.Switch{
		{Name: "s1", DeviceID: 1, Role: v1alpha1.RoleSpine, DataAddress: "127.0.0.1:7400"},
		{Name: "leaf-b", DeviceID: 3, Role: v1alpha1.RoleStorageLeaf, Rack: rack(1), DataAddress: "127.0.0.1:7600"},
		{Name: "s2", DeviceID: 2, Role: v1alpha1.RoleSpine, DataAddress: "127.0.0.1:7500"},
		{Name: "leaf-a", DeviceID: 4, Role: v1alpha1.RoleStorageLeaf, Rack: rack(0), DataAddress: "127.0.0.1:7700"},
	}}
	if edit != nil {
		edit(f)
	}
	return func(name string) (layout.Fabric, bool) { return layout.Fabric{Spec: f}, name == "tofino" }
}

func switchLayers() []layout.Layer {
	return []layout.Layer{
		{Name: "spine", Spec: v1alpha1.CacheLayerSpec{Backend: v1alpha1.BackendSwitch,
			Switch: &v1alpha1.SwitchLayerSpec{FabricRef: "tofino", Role: v1alpha1.RoleSpine}}},
		{Name: "leaf", Spec: v1alpha1.CacheLayerSpec{Backend: v1alpha1.BackendSwitch, BoundToRacks: true,
			Switch: &v1alpha1.SwitchLayerSpec{FabricRef: "tofino", Role: v1alpha1.RoleStorageLeaf}}},
	}
}

// TestSwitchLayersInTheMap: switch-backed layers resolved from their
// fabric enter the partition map, members at their switches' data
// addresses, a storage-leaf layer's by rack.
func TestSwitchLayersInTheMap(t *testing.T) {
	layers := switchLayers()
	if err := layout.ResolveSwitches(layers, 2, fabric(nil)); err != nil {
		t.Fatal(err)
	}
	spec := v1alpha1.CacheClusterSpec{Storage: v1alpha1.StorageSpec{Racks: 2, ShardsPerRack: 2}}
	c, err := layout.New("shop", spec, layers)
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.Map(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Layers) != 2 || !m.Layers[0].Switch || !m.Layers[1].Switch {
		t.Fatalf("layers %+v", m.Layers)
	}
	want := [][]string{{"127.0.0.1:7400", "127.0.0.1:7500"}, {"127.0.0.1:7700", "127.0.0.1:7600"}}
	for l, addrs := range want {
		for i, a := range addrs {
			if got := m.Layers[l].Members[i].Address; got != a {
				t.Errorf("layer %d member %d at %q, want %q", l, i, got, a)
			}
		}
	}
}

func TestResolveSwitchesRejects(t *testing.T) {
	tests := []struct {
		name string
		edit func(*v1alpha1.SwitchFabricSpec)
		want string
	}{
		{"no data address", func(f *v1alpha1.SwitchFabricSpec) { f.Switches[0].DataAddress = "" }, "switch s1 of fabric tofino has no dataAddress"},
		{"two switches of a rack", func(f *v1alpha1.SwitchFabricSpec) { f.Switches[3].Rack = rack(1) }, "both serve rack 1"},
		{"a rack without its switch", func(f *v1alpha1.SwitchFabricSpec) { f.Switches = f.Switches[:3] }, "1 switches for 2 racks"},
		{"no switch of the role", func(f *v1alpha1.SwitchFabricSpec) {
			f.Switches[0].Role, f.Switches[2].Role = v1alpha1.RoleClientLeaf, v1alpha1.RoleClientLeaf
		}, "has no spine switch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := layout.ResolveSwitches(switchLayers(), 2, fabric(tt.edit))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one with %q", err, tt.want)
			}
		})
	}
	layers := switchLayers()
	layers[0].Spec.Switch.FabricRef = "other"
	if err := layout.ResolveSwitches(layers, 2, fabric(nil)); err == nil || !strings.Contains(err.Error(), "switch fabric not found") {
		t.Errorf("unknown fabric: %v", err)
	}
}

// TestLeavingFabric: a leaving fabric's layers keep the switches it
// still lists, marked Leaving, and a leaving fabric without switches of
// the role leaves its layer without members, which the partition map
// then leaves out; the other layers stay.
func TestLeavingFabric(t *testing.T) {
	tests := []struct {
		name    string
		spec    func(*v1alpha1.SwitchFabricSpec) *v1alpha1.SwitchFabricSpec
		members []int // of the spine and the leaf layer
		layers  []string
	}{
		{"switches still in the map", func(f *v1alpha1.SwitchFabricSpec) *v1alpha1.SwitchFabricSpec { return f }, []int{2, 2}, []string{"spine", "leaf"}},
		{"spine switches left", func(f *v1alpha1.SwitchFabricSpec) *v1alpha1.SwitchFabricSpec {
			f.Switches = []v1alpha1.Switch{f.Switches[1], f.Switches[3]}
			return f
		}, []int{0, 2}, []string{"leaf"}},
		{"gone", func(*v1alpha1.SwitchFabricSpec) *v1alpha1.SwitchFabricSpec { return nil }, []int{0, 0}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var spec *v1alpha1.SwitchFabricSpec
			fabric(func(f *v1alpha1.SwitchFabricSpec) { spec = tt.spec(f) })("tofino")
			layers := switchLayers()
			get := func(name string) (layout.Fabric, bool) {
				return layout.Fabric{Spec: spec, Leaving: true}, name == "tofino"
			}
			if err := layout.ResolveSwitches(layers, 2, get); err != nil {
				t.Fatal(err)
			}
			for i, l := range layers {
				if !l.Leaving || len(l.Switches) != tt.members[i] {
					t.Errorf("layer %s: leaving %v, %d switches; want leaving, %d", l.Name, l.Leaving, len(l.Switches), tt.members[i])
				}
			}
			nodes := int32(2)
			soft := layout.Layer{Name: "soft", Spec: v1alpha1.CacheLayerSpec{Nodes: &nodes}}
			cs := v1alpha1.CacheClusterSpec{Storage: v1alpha1.StorageSpec{Racks: 2, ShardsPerRack: 2}}
			c, err := layout.New("shop", cs, append(layers, soft))
			if err != nil {
				t.Fatal(err)
			}
			m, err := c.Map(nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, l := range m.Layers {
				names = append(names, l.Name)
			}
			if want := append(slices.Clone(tt.layers), "soft"); !slices.Equal(names, want) {
				t.Errorf("map layers %v, want %v", names, want)
			}
		})
	}
}

// TestClientLeaves: the client leaves of the fabric a cluster's switch
// layers use are the cluster's, once each however many layers use the
// fabric, and none is a member of the map.
func TestClientLeaves(t *testing.T) {
	layers := switchLayers()
	withLeaves := fabric(func(f *v1alpha1.SwitchFabricSpec) {
		f.Switches = append(f.Switches,
			v1alpha1.Switch{Name: "c0", DeviceID: 5, Role: v1alpha1.RoleClientLeaf, DataAddress: "127.0.0.1:7800"},
			v1alpha1.Switch{Name: "c1", DeviceID: 6, Role: v1alpha1.RoleClientLeaf, DataAddress: "127.0.0.1:7900"})
	})
	if err := layout.ResolveSwitches(layers, 2, withLeaves); err != nil {
		t.Fatal(err)
	}
	c, err := layout.New("shop", v1alpha1.CacheClusterSpec{Storage: v1alpha1.StorageSpec{Racks: 2, ShardsPerRack: 2}}, layers)
	if err != nil {
		t.Fatal(err)
	}
	leaves := c.ClientLeaves()
	if len(leaves) != 2 || leaves[0].Name != "shop-c0" || leaves[1].Name != "shop-c1" || leaves[0].Fabric != "tofino" ||
		leaves[1].Switch.DataAddress != "127.0.0.1:7900" {
		t.Fatalf("client leaves %+v", leaves)
	}
	if n := len(c.SwitchMembers()); n != 4 {
		t.Fatalf("%d switch members, want the 4 cache switches", n)
	}
	m, err := c.Map(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range m.Layers {
		for _, mb := range l.Members {
			if mb.Address == "127.0.0.1:7800" || mb.Address == "127.0.0.1:7900" {
				t.Fatalf("client leaf in the map: %+v", mb)
			}
		}
	}
}

// TestClientLeavesRefused: a client leaf without a dataAddress, and a
// layer of client leaves, are refused.
func TestClientLeavesRefused(t *testing.T) {
	noData := fabric(func(f *v1alpha1.SwitchFabricSpec) {
		f.Switches = append(f.Switches, v1alpha1.Switch{Name: "c0", DeviceID: 5, Role: v1alpha1.RoleClientLeaf})
	})
	if err := layout.ResolveSwitches(switchLayers(), 2, noData); err == nil || !strings.Contains(err.Error(), "switch c0 of fabric tofino has no dataAddress") {
		t.Errorf("client leaf without dataAddress: %v", err)
	}
	layers := switchLayers()
	layers[0].Spec.Switch.Role = v1alpha1.RoleClientLeaf
	if err := layout.ResolveSwitches(layers, 2, fabric(nil)); err == nil || !strings.Contains(err.Error(), "client-leaf switches cache nothing") {
		t.Errorf("a layer of client leaves: %v", err)
	}
}
