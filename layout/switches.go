package layout

import (
	"errors"
	"fmt"
	"sort"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/placement/partmap"
)

// ErrFabricNotFound is wrapped by ResolveSwitches for a fabricRef that
// names no SwitchFabric.
var ErrFabricNotFound = errors.New("switch fabric not found")

// Fabric is what a FabricGetter found of a SwitchFabric.
type Fabric struct {
	Spec *v1alpha1.SwitchFabricSpec
	// Leaving says the fabric is being deleted or is gone: the switches
	// of its layers are fenced, then leave the partition map, and Spec
	// holds only the switches still in the map (none once they left).
	Leaving bool
}

// FabricGetter looks up a SwitchFabric by name.
type FabricGetter func(name string) (Fabric, bool)

// ResolveSwitches gives every switch-backed layer its members: the
// switches of its fabric with its role, in the fabric's order — by rack
// for a layer bound to racks, which needs one switch per rack — each with
// a DataAddress; and the fabric's client leaves (ClientLeaves), each with
// a DataAddress too: clients send their reads there. A layer cannot have
// the client-leaf role: a client leaf caches nothing.
func ResolveSwitches(layers []Layer, racks int, get FabricGetter) error {
	for i := range layers {
		l := &layers[i]
		if l.Software() {
			continue
		}
		ref := l.Spec.Switch
		if ref.Role == v1alpha1.RoleClientLeaf {
			return fmt.Errorf("cannot resolve layer %s: client-leaf switches cache nothing and cannot serve a cache layer; "+
				"a fabric's client leaves route the reads of the clients behind them to the layers of its spine and storage-leaf switches", l.Name)
		}
		fab, ok := get(ref.FabricRef)
		if !ok {
			return fmt.Errorf("cannot resolve layer %s: fabric %q: %w", l.Name, ref.FabricRef, ErrFabricNotFound)
		}
		f := fab.Spec
		l.Leaving = fab.Leaving
		if l.Leaving && (f == nil || !hasRole(f.Switches, ref.Role)) {
			l.Switches = nil // they left the map: the layer has no member
			continue
		}
		var sws []v1alpha1.Switch
		l.ClientLeaves = nil
		for _, s := range f.Switches {
			if s.Role != ref.Role && s.Role != v1alpha1.RoleClientLeaf {
				continue
			}
			if s.DataAddress == "" {
				return fmt.Errorf("cannot resolve layer %s: switch %s of fabric %s has no dataAddress", l.Name, s.Name, ref.FabricRef)
			}
			if s.Role == v1alpha1.RoleClientLeaf {
				l.ClientLeaves = append(l.ClientLeaves, s)
				continue
			}
			sws = append(sws, s)
		}
		if len(sws) == 0 {
			return fmt.Errorf("cannot resolve layer %s: fabric %s has no %s switch", l.Name, ref.FabricRef, ref.Role)
		}
		if l.Spec.BoundToRacks {
			if err := byRack(l.Name, sws, racks); err != nil {
				return err
			}
		}
		l.Switches, l.Driver, l.PipelineSource = sws, f.Driver, f.PipelineSource
	}
	return nil
}

// hasRole says whether a switch of sws has role.
func hasRole(sws []v1alpha1.Switch, role v1alpha1.SwitchRole) bool {
	for _, s := range sws {
		if s.Role == role {
			return true
		}
	}
	return false
}

// byRack orders the switches of a layer bound to racks by their rack:
// exactly one per rack.
func byRack(layer string, sws []v1alpha1.Switch, racks int) error {
	seen := map[int32]string{}
	for _, s := range sws {
		switch {
		case s.Rack == nil || int(*s.Rack) >= racks:
			return fmt.Errorf("cannot resolve layer %s: switch %s serves no rack of 0…%d", layer, s.Name, racks-1)
		case seen[*s.Rack] != "":
			return fmt.Errorf("cannot resolve layer %s: switches %s and %s both serve rack %d", layer, seen[*s.Rack], s.Name, *s.Rack)
		}
		seen[*s.Rack] = s.Name
	}
	if len(sws) != racks {
		return fmt.Errorf("cannot resolve layer %s: %d switches for %d racks; a layer bound to racks has one per rack", layer, len(sws), racks)
	}
	sort.Slice(sws, func(i, j int) bool { return *sws[i].Rack < *sws[j].Rack })
	return nil
}

// SwitchMember is a switch of a switch-backed layer and its member name in
// the partition map.
type SwitchMember struct {
	Layer  string
	Fabric string
	Switch v1alpha1.Switch
	Member string
}

// SwitchMembers are the switches of the cluster's switch-backed layers
// (resolved by ResolveSwitches), in layer and member order.
func (c *Cluster) SwitchMembers() []SwitchMember {
	var out []SwitchMember
	for _, l := range c.Layers {
		for i, s := range l.Switches {
			out = append(out, SwitchMember{Layer: l.Name, Fabric: l.Spec.Switch.FabricRef, Switch: s, Member: partmap.MemberName(c.Name, l.Name, i)})
		}
	}
	return out
}

// ClientLeaf is a client-leaf switch of a fabric the cluster's
// switch-backed layers use: the top of rack of clients (DistCache §4.2),
// which sends each read to the less loaded of the key's spine and
// storage-leaf switches. It is not a member of the partition map.
type ClientLeaf struct {
	Fabric string
	Switch v1alpha1.Switch
	// Name is its name among the cluster's processes and a fleet's
	// switches (ClientLeafName).
	Name string
}

// ClientLeafName is the name of client-leaf switch sw of cluster.
func ClientLeafName(cluster, sw string) string { return cluster + "-" + sw }

// ClientLeaves are the client-leaf switches of the fabrics the cluster's
// switch-backed layers use (resolved by ResolveSwitches), each once, in
// layer and fabric order.
func (c *Cluster) ClientLeaves() []ClientLeaf {
	var out []ClientLeaf
	seen := map[string]bool{}
	for _, l := range c.Layers {
		if l.Software() || seen[l.Spec.Switch.FabricRef] {
			continue
		}
		seen[l.Spec.Switch.FabricRef] = true
		for _, s := range l.ClientLeaves {
			out = append(out, ClientLeaf{Fabric: l.Spec.Switch.FabricRef, Switch: s, Name: ClientLeafName(c.Name, s.Name)})
		}
	}
	return out
}
