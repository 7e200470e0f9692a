package topology

import (
	"fmt"

	"github.com/distcache/distcache/placement/partmap"
)

// Layer is one cache layer of a Shape.
type Layer struct {
	Name string
	// Members is the layer's member count: its cache nodes, one per rack
	// for a layer bound to racks, or its switches.
	Members      int
	VirtualNodes int
	// Seed is the layer's ring seed; 0 derives one from the names.
	Seed         uint64
	BoundToRacks bool
	// Switch says the layer is switch-backed; SwitchAddresses are then its
	// switches' data addresses in member order, empty until they are known.
	Switch          bool
	SwitchAddresses []string
}

// Shape is a cache cluster's storage and cache layers.
type Shape struct {
	// Cluster is the cluster's name; it prefixes every member and shard.
	Cluster       string
	Racks         int
	ShardsPerRack int
	// DirectReads and DirectWrites let clients read and write uncached
	// keys at Redis (partmap.Spec).
	DirectReads, DirectWrites bool
	// HashTags places keys by their hash tags (partmap.Storage.HashTags).
	HashTags bool
	// ReplayProtection is the map's replay protection (partmap.Spec).
	ReplayProtection partmap.ReplayProtection
	// Layers are upper first.
	Layers []Layer
}

// MapSpec is the partmap.Spec of the shape's software layers and of its
// switch-backed layers whose switches are known, with addresses from a
// (nil leaves the software members' to the previous map; switches' are
// their data addresses).
func (s Shape) MapSpec(a partmap.Addresser) partmap.Spec {
	ps := partmap.Spec{
		Cluster:       s.Cluster,
		Racks:         s.Racks,
		ShardsPerRack: s.ShardsPerRack,
		Addresses:     a,
		DirectReads:   s.DirectReads,
		DirectWrites:  s.DirectWrites,
		HashTags:      s.HashTags,

		ReplayProtection: s.ReplayProtection,
	}
	for _, l := range s.Layers {
		if len(l.SwitchAddresses) > 0 {
			ps.Addresses = switchAddresser{a, s.Layers}
			break
		}
	}
	for _, l := range s.Layers {
		if l.Switch && len(l.SwitchAddresses) == 0 {
			continue
		}
		ps.Layers = append(ps.Layers, partmap.LayerSpec{
			Name:         l.Name,
			Nodes:        l.Members,
			VirtualNodes: l.VirtualNodes,
			BoundToRacks: l.BoundToRacks,
			Switch:       l.Switch,
			Seed:         l.Seed,
		})
	}
	return ps
}

// Map builds the partition map from prev (nil for the first version): see
// partmap.Build for what it keeps.
func (s Shape) Map(prev *partmap.Map, a partmap.Addresser) (*partmap.Map, error) {
	m, err := partmap.Build(s.MapSpec(a), prev)
	if err != nil {
		return nil, fmt.Errorf("cannot build the partition map of %s: %w", s.Cluster, err)
	}
	return m, nil
}

// ShardName is the name of shard i of rack r of cluster: the pod name of
// ordinal i of the rack's storage StatefulSet.
func ShardName(cluster string, r, i int) string { return partmap.ShardName(cluster, r, i) }

// RackName is the name of the storage set of rack r: shard names are it
// followed by "-" and the shard's ordinal.
func RackName(cluster string, r int) string { return fmt.Sprintf("%s-rack-%d", cluster, r) }

// LayerSetName is the name of a layer's set of cache nodes: member names
// are it followed by "-" and the member's ordinal.
func LayerSetName(cluster, layer string) string { return cluster + "-" + layer }

// switchAddresser answers a switch-backed layer's member addresses with
// its switches' data addresses and every other address with a.
type switchAddresser struct {
	a      partmap.Addresser
	layers []Layer
}

func (s switchAddresser) ShardAddress(r, i int) string {
	if s.a == nil {
		return ""
	}
	return s.a.ShardAddress(r, i)
}

func (s switchAddresser) RedisAddress(r, i int) string {
	if ra, ok := s.a.(partmap.RedisAddresser); ok {
		return ra.RedisAddress(r, i)
	}
	return ""
}

// MemberDomain forwards the domains of a's members, if it names them
// (partmap.DomainAddresser); switch-backed layers have none.
func (s switchAddresser) MemberDomain(layer string, i int) (zone, host string) {
	if da, ok := s.a.(partmap.DomainAddresser); ok {
		return da.MemberDomain(layer, i)
	}
	return "", ""
}

func (s switchAddresser) MemberAddress(layer string, i int) string {
	for _, l := range s.layers {
		if l.Name == layer && l.Switch && i < len(l.SwitchAddresses) {
			return l.SwitchAddresses[i]
		}
	}
	if s.a == nil {
		return ""
	}
	return s.a.MemberAddress(layer, i)
}
