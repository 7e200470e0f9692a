package switchfabric

import (
	"fmt"
	"net/netip"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/fabric/fleet"
	pipelines "github.com/distcache/distcache/stratum_pipelines"
)

// The fabric's client leaves (role client-leaf) are programmed beside its
// cache switches, in the same fleet, from the same reads of the bound
// cluster's map: a primary session per leaf that pushes the pipeline's
// client leaf program (pipelines.ClientLeafPipelines) and keeps its
// tables (package fabric/clientleaf). A client leaf caches nothing: it has
// no serving lease and is no member of the map, so the cluster does not
// fail it over; its status has no member, and Ready counts it as any
// switch.

// clientLeafSwitches are the fleet's switches of b's client leaves, each
// named in the fleet by its layout name, and the P4Info of their program
// (nil without client leaves).
func clientLeafSwitches(b *binding) ([]fleet.Switch, *p4configv1.P4Info, error) {
	if len(b.ClientLeaves) == 0 {
		return nil, nil, nil
	}
	info, err := pipelines.ProgramP4Info(b.LeafProgram)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot load the client leaf program %q: %w", b.LeafProgram, err)
	}
	out := make([]fleet.Switch, 0, len(b.ClientLeaves))
	for _, cl := range b.ClientLeaves {
		data, err := netip.ParseAddrPort(cl.Switch.DataAddress)
		if err != nil {
			return nil, nil, fmt.Errorf("cannot program client leaf %s: dataAddress %q: %w", cl.Switch.Name, cl.Switch.DataAddress, err)
		}
		out = append(out, fleet.Switch{Member: cl.Name, P4Runtime: cl.Switch.P4RuntimeAddress, DeviceID: uint64(cl.Switch.DeviceID),
			GNMI: cl.Switch.GNMIAddress, ClientLeaf: data})
	}
	return out, info, nil
}

// clientLeafStatuses reads each client leaf's session from the fleet.
func clientLeafStatuses(rn *running) []v1alpha1.SwitchStatus {
	out := make([]v1alpha1.SwitchStatus, 0, len(rn.binding.ClientLeaves))
	for _, cl := range rn.binding.ClientLeaves {
		out = append(out, switchStatus(rn, cl.Switch.Name, "", cl.Name))
	}
	return out
}
