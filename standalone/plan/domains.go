package plan

import (
	"fmt"

	"github.com/distcache/distcache/layout"
	"github.com/distcache/distcache/placement/partmap"
)

// Domain is a cache member's zone and host.
type Domain struct{ Zone, Host string }

// MemberDomain is the domain Options.Domains gives member i of layer.
func (a *addresser) MemberDomain(layer string, i int) (zone, host string) {
	d := a.domains[partmap.MemberName(a.cluster, layer, i)]
	return d.Zone, d.Host
}

// checkDomains refuses domains of members c does not have.
func checkDomains(c *layout.Cluster, domains map[string]Domain) error {
	if len(domains) == 0 {
		return nil
	}
	spec := c.MapSpec(nil)
	members := map[string]bool{}
	for _, l := range spec.Layers {
		n := l.Nodes
		if l.BoundToRacks {
			n = spec.Racks
		}
		for i := range n {
			members[partmap.MemberName(spec.Cluster, l.Name, i)] = !l.Switch
		}
	}
	for name := range domains {
		if software, ok := members[name]; !ok || !software {
			return fmt.Errorf("cannot place member %q in a failure domain: %s has no cache node of that name", name, c.Name)
		}
	}
	return nil
}
