package partmap

import (
	"fmt"
	"slices"

	"github.com/distcache/distcache/placement/hashing"
	"github.com/distcache/distcache/placement/ring"
)

// Placement is a compiled Map: the immutable structure every component uses
// to find a key's storage shard and its owner in each cache layer. It is safe
// for concurrent use.
type Placement struct {
	m       *Map
	layers  []compiledLayer
	copies  map[string][]holder // Map.Copies by key; nil without any
	rackFn  hashing.Func
	shardFn hashing.Func
	// shardBase is, by rack, the global index of its first shard.
	shardBase []int
	// domains and layerDomains index the members' failure domains
	// (domains.go); layerDomains is nil when no member has one.
	domains      domains
	layerDomains []layerDomains
	// boundLayer is the index of the layer bound to racks, or -1.
	boundLayer int
}

type compiledLayer struct {
	ring   *ring.Ring // owning members (Active and Fenced) only
	byRing []int      // ring member index -> index in Layer.Members
	byRack []int      // bound layers: rack index -> owning member index, or -1
	// byRackAll is, for a bound layer, the member of each rack in any
	// state, or -1.
	byRackAll []int
	capacity  []float64 // per member, defaulted to 1
	switched  bool      // a switch-backed layer (Layer.Switch)
}

// Candidate is a key's owner in one layer.
type Candidate struct {
	Layer  int    // index into Map.Layers
	Member int    // index into Layer.Members
	Node   uint32 // the member's ID
	// Capacity is the member's relative throughput (1 by default).
	Capacity float64
	// Fenced reports that the owner is Fenced: it still takes the key's
	// invalidations but serves no reads.
	Fenced bool
	// Switch reports a switch-backed layer's member: reads of the key go
	// to its read port for Shard, the key's global shard index
	// (SwitchReadPort).
	Switch bool
	Shard  int
}

// Compile validates m and builds its lookup structure. m must not be
// modified afterwards.
func Compile(m *Map) (*Placement, error) { return Recompile(nil, m) }

// Recompile compiles m like Compile, reusing from prev, a placement compiled
// earlier (nil: none), the ring of every layer whose seed and virtual nodes
// are unchanged: whole when its owning members are too, else the points of
// the members it keeps. Building the rings is nearly all of Compile's cost,
// paid by every process at every map version; a version that fences a
// member, or fails one in another layer, needs none of it, and one that
// fails or restores a member hashes and sorts only that member's points
// (BenchmarkRecompile, docs/benchmarks.md).
func Recompile(prev *Placement, m *Map) (*Placement, error) {
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("cannot compile partition map: %w", err)
	}
	p := &Placement{
		m:          m,
		rackFn:     hashing.New(hashing.Derive(m.Storage.Seed, "rack")),
		shardFn:    hashing.New(hashing.Derive(m.Storage.Seed, "shard")),
		boundLayer: -1,
	}
	rackIndex := make(map[string]int, len(m.Storage.Racks))
	base := 0
	for i, r := range m.Storage.Racks {
		rackIndex[r.Name] = i
		p.shardBase = append(p.shardBase, base)
		base += len(r.Shards)
	}
	for i, l := range m.Layers {
		cl, err := compileLayer(l, rackIndex, len(m.Storage.Racks), prev.ringOf(i))
		if err != nil {
			return nil, fmt.Errorf("cannot compile partition map: layer %q: %w", l.Name, err)
		}
		p.layers = append(p.layers, cl)
		if l.BoundToRacks {
			p.boundLayer = i
		}
	}
	if err := p.compileDomains(prev); err != nil {
		return nil, fmt.Errorf("cannot compile partition map: %w", err)
	}
	var err error
	if p.copies, err = compileCopies(m); err != nil {
		return nil, fmt.Errorf("cannot compile partition map: %w", err)
	}
	return p, nil
}

// ringOf returns the ring of p's layer i, nil if p has none.
func (p *Placement) ringOf(i int) *ring.Ring {
	if p == nil || i >= len(p.layers) {
		return nil
	}
	return p.layers[i].ring
}

// compileLayer compiles l, reusing prev (a ring compiled earlier, or nil)
// when it was built with l's seed and virtual nodes: as it is when its
// members are those that own keys in l now, or for the points of the
// members it keeps (ring.WithMembers) when some failed or were restored.
func compileLayer(l Layer, rackIndex map[string]int, racks int, prev *ring.Ring) (compiledLayer, error) {
	cl := compiledLayer{switched: l.Switch}
	names := make([]string, 0, len(l.Members))
	cl.capacity = make([]float64, len(l.Members))
	if l.BoundToRacks {
		cl.byRack = make([]int, racks)
		cl.byRackAll = make([]int, racks)
		for i := range cl.byRack {
			cl.byRack[i], cl.byRackAll[i] = -1, -1
		}
	}
	for i, mb := range l.Members {
		cl.capacity[i] = mb.Capacity
		if cl.capacity[i] == 0 {
			cl.capacity[i] = 1
		}
		if l.BoundToRacks {
			cl.byRackAll[rackIndex[mb.Rack]] = i
		}
		if !mb.State.Owns() {
			continue
		}
		names = append(names, mb.Name)
		cl.byRing = append(cl.byRing, i)
		if l.BoundToRacks {
			cl.byRack[rackIndex[mb.Rack]] = i
		}
	}
	var (
		r   *ring.Ring
		err error
	)
	switch {
	case prev == nil || prev.Seed() != l.Seed || prev.VirtualNodes() != l.VirtualNodes:
		r, err = ring.New(l.Seed, l.VirtualNodes, names)
	case slices.Equal(prev.Members(), names):
		r = prev
	default: // members failed or restored: only their points change
		r, err = prev.WithMembers(names)
	}
	if err != nil {
		return cl, err
	}
	cl.ring = r
	return cl, nil
}

// Map returns the map p was compiled from.
func (p *Placement) Map() *Map { return p.m }

// Version is the map version.
func (p *Placement) Version() int64 { return p.m.Version }

// Layers reports the number of cache layers.
func (p *Placement) Layers() int { return len(p.layers) }

// rack returns the index of the rack storing key.
func (p *Placement) rack(key string) int {
	return int(jump(p.rackFn.String(p.storageKey(key)), len(p.m.Storage.Racks)))
}

// Shard returns the rack and shard indexes storing key.
func (p *Placement) Shard(key string) (rack, shard int) {
	rack = p.rack(key)
	shard = int(jump(p.shardFn.String(p.storageKey(key)), len(p.m.Storage.Racks[rack].Shards)))
	return rack, shard
}

// Owner returns the index of key's owner in layer (an Active or Fenced
// member), or -1 when the layer has no such member. With failure domains
// it depends on the key's owners in the layers above (domains.go).
func (p *Placement) Owner(layer int, key string) int {
	if p.layerDomains == nil || p.layers[layer].switched || p.layers[layer].byRack != nil {
		return p.ringOwner(layer, key)
	}
	var buf [maxDomainLayers]int
	return p.domainOwners(key, layer, buf[:0])[layer]
}

// ringOwner is key's owner in layer without regard to failure domains:
// the rack's member of a bound layer, else the ring's.
func (p *Placement) ringOwner(layer int, key string) int {
	cl := &p.layers[layer]
	if cl.byRack != nil {
		rack := int(jump(p.rackFn.String(p.storageKey(key)), len(cl.byRack)))
		if m := cl.byRack[rack]; m >= 0 {
			return m
		}
		// The rack's own member failed: its keys fall back to the layer's
		// ring over the surviving members, so only they move.
	}
	var i int
	if cl.switched {
		i = cl.ring.Locate(SwitchPoint(key))
	} else {
		i = cl.ring.LocateKey(key)
	}
	if i < 0 {
		return -1
	}
	return cl.byRing[i]
}

// Candidates appends to dst the members that may hold key, and returns the
// extended slice: for a key with decided copies (Map.Copies) its holders,
// otherwise its owner in every layer that has an owning member, upper
// layers first. A Fenced one is marked so (readers skip it, writes
// invalidate it). With a dst of sufficient capacity it does not allocate.
func (p *Placement) Candidates(key string, dst []Candidate) []Candidate {
	if p.copies != nil {
		if hs, ok := p.copies[key]; ok {
			return p.decidedCandidates(key, hs, dst)
		}
	}
	return p.Owners(key, dst)
}

// Owners appends to dst key's owner in every layer that has an owning
// member, upper layers first: its candidates when no copies are decided
// for it. A switch-backed layer has none for a key longer than
// MaxSwitchKeyLen.
func (p *Placement) Owners(key string, dst []Candidate) []Candidate {
	shard := -1
	if p.layerDomains != nil {
		var buf [maxDomainLayers]int
		owners := p.domainOwners(key, len(p.layers)-1, buf[:0])
		for l, m := range owners {
			if p.layers[l].switched {
				dst = p.switchOwner(l, key, &shard, dst)
			} else if m >= 0 {
				dst = append(dst, p.candidate(l, m))
			}
		}
		return dst
	}
	for l := range p.layers {
		if p.layers[l].switched {
			dst = p.switchOwner(l, key, &shard, dst)
		} else if m := p.Owner(l, key); m >= 0 {
			dst = append(dst, p.candidate(l, m))
		}
	}
	return dst
}

// switchOwners appends key's owner in every switch-backed layer.
func (p *Placement) switchOwners(key string, dst []Candidate) []Candidate {
	shard := -1
	for l := range p.layers {
		if p.layers[l].switched {
			dst = p.switchOwner(l, key, &shard, dst)
		}
	}
	return dst
}

// switchOwner appends key's owner in switch-backed layer l, if the key is
// short enough for a switch, with the key's global shard index (computed
// once into *shard).
func (p *Placement) switchOwner(l int, key string, shard *int, dst []Candidate) []Candidate {
	if len(key) > MaxSwitchKeyLen {
		return dst
	}
	m := p.Owner(l, key)
	if m < 0 {
		return dst
	}
	if *shard < 0 {
		*shard = p.ShardIndex(key)
	}
	c := p.candidate(l, m)
	c.Switch, c.Shard = true, *shard
	return append(dst, c)
}

// candidate describes member m of layer l.
func (p *Placement) candidate(l, m int) Candidate {
	mb := &p.m.Layers[l].Members[m]
	return Candidate{
		Layer:    l,
		Member:   m,
		Node:     mb.ID,
		Capacity: p.layers[l].capacity[m],
		Fenced:   mb.State == Fenced,
	}
}

// Holds reports whether member of layer is one of key's candidates: the
// cache node that may hold a copy of key.
func (p *Placement) Holds(layer, member int, key string) bool {
	if p.copies != nil {
		if hs, ok := p.copies[key]; ok {
			var buf [8]Candidate
			return hasCandidate(p.decidedCandidates(key, hs, buf[:0]), layer, member)
		}
	}
	return p.Owner(layer, key) == member
}

// jump is Lamping and Veach's jump consistent hash ("A Fast, Minimal Memory,
// Consistent Hash Algorithm", 2014): it maps key to one of n buckets with
// exactly even expected load, no memory, and moves only 1/(n+1) of keys when
// a bucket is appended. Storage placement uses it because storage shards are
// added but never remapped on failure (their data lives there), and because
// perfect balance keeps the uncached load even across thousands of servers.
func jump(key uint64, n int) int32 {
	var b, j int64 = -1, 0
	for j < int64(n) {
		b = j
		key = key*2862933555777941757 + 1
		j = int64(float64(b+1) * (float64(int64(1)<<31) / float64((key>>33)+1)))
	}
	return int32(b)
}

// Replicas appends to dst the indexes of up to n distinct owning members of
// layer that hold key when it is replicated n times within the layer: its
// owner first, then the next members clockwise on the layer's ring. A bound
// layer has one member per rack and is not replicated: it yields the owner.
func (p *Placement) Replicas(layer int, key string, n int, dst []int) []int {
	cl := &p.layers[layer]
	if cl.byRack != nil || n <= 1 {
		if o := p.Owner(layer, key); o >= 0 {
			dst = append(dst, o)
		}
		return dst
	}
	start := len(dst)
	dst = cl.ring.Successors(cl.ring.KeyHash(key), n, dst)
	for i := start; i < len(dst); i++ {
		dst[i] = cl.byRing[dst[i]]
	}
	return dst
}
