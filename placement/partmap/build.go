package partmap

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/distcache/distcache/placement/hashing"
	"github.com/distcache/distcache/placement/ring"
)

// Spec is the desired topology of a cache cluster: what the operator and
// standalone mode derive from a CacheCluster and its CacheLayers.
type Spec struct {
	Cluster string
	// Racks and ShardsPerRack size the storage tier.
	Racks         int
	ShardsPerRack int
	// StorageSeed seeds the storage placement; 0 derives it from Cluster.
	StorageSeed uint64
	// Layers lists the cache layers, upper layers first.
	Layers []LayerSpec
	// Addresses names the data-plane address of every shard and member;
	// nil keeps the addresses of the previous map's members and leaves the
	// rest empty.
	Addresses Addresser
	// DirectReads publishes every shard's Redis address (Shard.Redis)
	// when Addresses is a RedisAddresser.
	DirectReads bool
	// DirectWrites marks every shard whose Redis is published as written
	// directly (Shard.DirectWrites).
	DirectWrites bool
	// HashTags places keys by their hash tags (Storage.HashTags).
	HashTags bool
	// ReplayProtection is the map's Map.ReplayProtection.
	ReplayProtection ReplayProtection
}

// Addresser names the data-plane addresses of a topology: pod DNS names in
// Kubernetes, loopback ports in standalone mode.
type Addresser interface {
	// ShardAddress is the host:port of shard s of rack r's storage shim.
	ShardAddress(rack, shard int) string
	// MemberAddress is the host:port of member i of the named layer.
	MemberAddress(layer string, i int) string
}

// RedisAddresser is an Addresser that also names the shards' Redis
// servers, for clients that read misses from them (Spec.DirectReads).
type RedisAddresser interface {
	Addresser
	// RedisAddress is the host:port of the Redis of shard s of rack r,
	// or "" when clients cannot read it directly.
	RedisAddress(rack, shard int) string
}

// DomainAddresser is an Addresser that also names the failure domains of
// the members of software layers (Member.Zone and Member.Host): the
// Kubernetes node and zone of their pods, or what standalone mode is told.
type DomainAddresser interface {
	Addresser
	// MemberDomain is the zone and host of member i of the named layer,
	// each "" when unknown.
	MemberDomain(layer string, i int) (zone, host string)
}

// LayerSpec is the desired shape of one cache layer.
type LayerSpec struct {
	Name string
	// Nodes is the member count; a layer bound to racks has one per rack and
	// may leave it 0.
	Nodes int
	// Seed seeds the layer's ring; 0 derives a distinct seed from the cluster
	// and layer names.
	Seed uint64
	// VirtualNodes defaults to ring.DefaultVirtualNodes.
	VirtualNodes int
	BoundToRacks bool
	// Switch: the layer is served by programmable switches (Layer.Switch).
	Switch bool
	// Capacity is the members' relative throughput (0 means 1).
	Capacity float64
}

// MemberName is the name of member i of a layer: the pod name of ordinal i
// of the layer's StatefulSet.
func MemberName(cluster, layer string, i int) string {
	return fmt.Sprintf("%s-%s-%d", cluster, layer, i)
}

// RackName is the name of storage rack r.
func RackName(r int) string { return fmt.Sprintf("rack-%d", r) }

// ShardName is the name of shard s of rack r: the pod name of ordinal s of
// the rack's storage StatefulSet.
func ShardName(cluster string, r, s int) string { return fmt.Sprintf("%s-rack-%d-%d", cluster, r, s) }

// Build computes the partition map for spec. Given the previously published
// map, it keeps the ids and states of members that still exist and the
// decided copies of keys whose members all do, gives new members fresh ids,
// and returns prev itself when nothing changed; otherwise the result's
// version is prev's plus one (1 without prev).
func Build(spec Spec, prev *Map) (*Map, error) {
	if err := spec.validate(); err != nil {
		return nil, fmt.Errorf("cannot build partition map: %w", err)
	}
	m := &Map{Format: FormatVersion, Version: 1, Cluster: spec.Cluster, ReplayProtection: spec.ReplayProtection}
	m.Storage.Seed = spec.StorageSeed
	m.Storage.HashTags = spec.HashTags
	if m.Storage.Seed == 0 {
		m.Storage.Seed = hashing.Derive(0, spec.Cluster+"/storage")
	}
	for r := range spec.Racks {
		rack := Rack{Name: RackName(r)}
		for s := range spec.ShardsPerRack {
			sh := Shard{Name: ShardName(spec.Cluster, r, s)}
			if spec.Addresses != nil {
				sh.Address = spec.Addresses.ShardAddress(r, s)
			}
			if ra, ok := spec.Addresses.(RedisAddresser); ok && spec.DirectReads {
				sh.Redis = ra.RedisAddress(r, s)
				sh.DirectWrites = spec.DirectWrites
			}
			rack.Shards = append(rack.Shards, sh)
		}
		m.Storage.Racks = append(m.Storage.Racks, rack)
	}
	ids := newIDAllocator(prev)
	for _, ls := range spec.Layers {
		m.Layers = append(m.Layers, buildLayer(spec, ls, ids))
	}
	if prev != nil {
		m.Copies = keptCopies(prev.Copies, m)
		keepEntries(prev, m)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("cannot build partition map: %w", err)
	}
	if prev == nil {
		return m, nil
	}
	m.Version = prev.Version
	if same, err := equalDocuments(m, prev); err != nil {
		return nil, fmt.Errorf("cannot build partition map: %w", err)
	} else if same {
		return prev, nil
	}
	m.Version = prev.Version + 1
	return m, nil
}

func buildLayer(spec Spec, ls LayerSpec, ids *idAllocator) Layer {
	l := Layer{Name: ls.Name, Seed: ls.Seed, VirtualNodes: ls.VirtualNodes, BoundToRacks: ls.BoundToRacks, Switch: ls.Switch}
	if l.Seed == 0 {
		l.Seed = hashing.Derive(0, spec.Cluster+"/layer/"+ls.Name)
	}
	if l.VirtualNodes == 0 {
		l.VirtualNodes = ring.DefaultVirtualNodes
	}
	n := ls.Nodes
	if ls.BoundToRacks {
		n = spec.Racks
	}
	for i := range n {
		mb := Member{Name: MemberName(spec.Cluster, ls.Name, i), Capacity: ls.Capacity, State: Active}
		if ls.BoundToRacks {
			mb.Rack = RackName(i)
		}
		ids.assign(&mb)
		if spec.Addresses != nil {
			mb.Address = spec.Addresses.MemberAddress(ls.Name, i)
		}
		if da, ok := spec.Addresses.(DomainAddresser); ok && !ls.Switch {
			mb.Zone, mb.Host = da.MemberDomain(ls.Name, i)
		}
		l.Members = append(l.Members, mb)
	}
	return l
}

func (s Spec) validate() error {
	if s.Cluster == "" {
		return errors.New("empty cluster name")
	}
	if s.Racks < 1 || s.ShardsPerRack < 1 {
		return fmt.Errorf("storage needs at least one rack with one shard, got %d racks of %d shards", s.Racks, s.ShardsPerRack)
	}
	seen := map[string]bool{}
	for _, l := range s.Layers {
		if l.Name == "" {
			return errors.New("layer with empty name")
		}
		if seen[l.Name] {
			return fmt.Errorf("duplicate layer %q", l.Name)
		}
		seen[l.Name] = true
		if l.BoundToRacks && l.Nodes != 0 && l.Nodes != s.Racks {
			return fmt.Errorf("layer %q is bound to racks: it has one node per rack (%d), not %d", l.Name, s.Racks, l.Nodes)
		}
		if !l.BoundToRacks && l.Nodes < 1 {
			return fmt.Errorf("layer %q needs at least one node, got %d", l.Name, l.Nodes)
		}
	}
	return nil
}

// idAllocator keeps the ids, states and addresses of members known to the previous map
// and hands out ids above every id it ever used to new members, so a stale
// telemetry report can never be attributed to a different node.
type idAllocator struct {
	known map[string]Member
	next  uint32
}

func newIDAllocator(prev *Map) *idAllocator {
	a := &idAllocator{known: map[string]Member{}}
	if prev == nil {
		return a
	}
	for _, l := range prev.Layers {
		for _, mb := range l.Members {
			a.known[mb.Name] = mb
			a.next = max(a.next, mb.ID+1)
		}
	}
	return a
}

// assign gives mb its id, and the state and address a member of that name
// had in the previous map.
func (a *idAllocator) assign(mb *Member) {
	if old, ok := a.known[mb.Name]; ok {
		mb.ID, mb.State, mb.Address = old.ID, old.State, old.Address
		return
	}
	mb.ID = a.next
	a.next++
}

func equalDocuments(a, b *Map) (bool, error) {
	ea, err := Encode(a)
	if err != nil {
		return false, err
	}
	eb, err := Encode(b)
	if err != nil {
		return false, err
	}
	return bytes.Equal(ea, eb), nil
}
