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

// FabricGetter looks up a SwitchFabric's spec by name.
type FabricGetter func(name string) (*v1alpha1.SwitchFabricSpec, bool)

// ResolveSwitches gives every switch-backed layer its members: the
// switches of its fabric with its role, in the fabric's order — by rack
// for a layer bound to racks, which needs one switch per rack — each with
// a DataAddress.
func ResolveSwitches(layers []Layer, racks int, get FabricGetter) error {
	for i := range layers {
		l := &layers[i]
		if l.Software() {
			continue
		}
		ref := l.Spec.Switch
		f, ok := get(ref.FabricRef)
		if !ok {
			return fmt.Errorf("cannot resolve layer %s: fabric %q: %w", l.Name, ref.FabricRef, ErrFabricNotFound)
		}
		var sws []v1alpha1.Switch
		for _, s := range f.Switches {
			if s.Role != ref.Role {
				continue
			}
			if s.DataAddress == "" {
				return fmt.Errorf("cannot resolve layer %s: switch %s of fabric %s has no dataAddress", l.Name, s.Name, ref.FabricRef)
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
