// Package partmap defines the partition map: the versioned document that says
// where every key lives, shared by the operator (which computes and publishes
// it), standalone mode and the data plane (which read it).
//
// A map has k cache layers and the storage placement. Each cache layer is a
// consistent-hash ring over its active members with its own seed, so the
// layers partition keys independently (DistCache, FAST '19, §3.1); a key is
// cached at most once per layer, and a reader chooses among the k owners by
// power-of-k-choices (package routing). The lowest layer may be bound to the
// storage racks: its member for a rack caches the hot keys stored in that rack,
// as the leaf switches of §4.1 do. Storage maps a key to a rack and a shard
// within the rack.
//
// When a cache member fails, the controller first marks it Fenced — it keeps
// its share of the keys, so writes still invalidate it, but it serves no
// cached value and readers go to the key's other candidates — and then
// Failed, publishing a new version each time: a Failed member leaves its
// layer's ring, so only its share of keys moves, spread over the survivors
// (§4.4). When it returns it is marked Active again and takes back exactly
// that share. The fencing step is what lets storage shims stop waiting for a
// dead member's acknowledgements without a stale read (docs/dataplane.md,
// Fencing).
//
// Compile turns a Map into a Placement, the immutable lookup structure; it is
// the only place that interprets a map, so every component places keys alike.
package partmap

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/distcache/distcache/placement/ring"
)

// FormatVersion is the version of the map's JSON schema.
const FormatVersion = 1

// MemberState is the state of a cache member in the map.
type MemberState string

const (
	// Active members own a share of their layer's keys and serve it.
	Active MemberState = "Active"
	// Fenced members still own their share (writes invalidate them) but
	// serve no cached value, and readers do not choose them: a member the
	// controller is about to fail.
	Fenced MemberState = "Fenced"
	// Failed members own nothing; their share is remapped to the survivors.
	Failed MemberState = "Failed"
)

// MemberStates are the states, in the order a failing member goes through
// them.
var MemberStates = []MemberState{Active, Fenced, Failed}

// Valid reports whether s is a known state.
func (s MemberState) Valid() bool { return s == Active || s == Fenced || s == Failed }

// Owns reports whether a member in state s is on its layer's ring: Active
// and Fenced members own a share of the keys, Failed ones none.
func (s MemberState) Owns() bool { return s == Active || s == Fenced }

// Map is the partition map document.
type Map struct {
	// Format is FormatVersion.
	Format int `json:"format"`
	// Version increases by one with every published change.
	Version int64 `json:"version"`
	// Cluster names the cache cluster the map belongs to.
	Cluster string `json:"cluster"`
	// Layers lists the cache layers, upper layers first.
	Layers []Layer `json:"layers"`
	// Storage places keys on storage racks and shards.
	Storage Storage `json:"storage"`
	// Copies lists the keys whose copies the control loop decided by cost
	// and benefit, sorted by key; every other key has one copy per layer,
	// on its owner. Readers older than this field reject a map that has
	// it.
	Copies []KeyCopies `json:"copies,omitempty"`
	// ReplayProtection is how every data-plane process protects signed
	// datagrams against replays (replay.go); absent: ReplayAccept.
	// Readers older than this field reject a map that has it, so a
	// publisher sets it only once every reader knows it.
	ReplayProtection ReplayProtection `json:"replayProtection,omitempty"`
}

// Layer is one cache layer.
type Layer struct {
	Name string `json:"name"`
	// Seed seeds the layer's ring; layers must use distinct seeds.
	Seed uint64 `json:"seed,string"`
	// VirtualNodes is the number of ring points per member.
	VirtualNodes int `json:"virtualNodes"`
	// BoundToRacks makes the member of a rack own the keys stored in it.
	BoundToRacks bool `json:"boundToRacks,omitempty"`
	// Entries is the most keys each member caches, as the sizing of the
	// layers decided it (WithEntries); 0: each node's own capacity.
	Entries int `json:"entries,omitempty"`
	// Switch marks a layer served by programmable switches (switch.go):
	// members' addresses are their coherence ports, reads go to a read
	// port per storage shard, and keys longer than MaxSwitchKeyLen bytes
	// have no candidate in it. Readers older than this field reject a map
	// that has it.
	Switch bool `json:"switch,omitempty"`
	// Members lists every member, active or failed.
	Members []Member `json:"members"`
}

// Member is one cache node.
type Member struct {
	Name string `json:"name"`
	// ID is the node id carried in packet telemetry, unique in the map and
	// kept by a member across versions.
	ID uint32 `json:"id"`
	// Address is the node's data-plane address (host:port), if known.
	Address string `json:"address,omitempty"`
	// Rack is the storage rack a member of a bound layer serves.
	Rack string `json:"rack,omitempty"`
	// Zone and Host are the member's failure domains: the zone and the
	// machine (a Kubernetes node) it runs on, empty when unknown. A key's
	// candidates in different layers are placed on distinct hosts, and in
	// distinct zones, where the members allow it (domains.go). Readers
	// older than these fields reject a map that has them.
	Zone string `json:"zone,omitempty"`
	Host string `json:"host,omitempty"`
	// Capacity is the member's relative throughput (1 when zero).
	Capacity float64     `json:"capacity,omitempty"`
	State    MemberState `json:"state"`
}

// Storage places keys on storage shards: a key's rack and then its shard
// within the rack are chosen by jump consistent hashing with seeds derived
// from Seed.
type Storage struct {
	Seed uint64 `json:"seed,string"`
	// HashTags places a key by its hash tag (HashTag): keys of one tag
	// share a shard. It moves every key with a tag, so it is set when a
	// cluster is created, never changed. Readers older than this field
	// reject a map that has it.
	HashTags bool   `json:"hashTags,omitempty"`
	Racks    []Rack `json:"racks"`
}

// Rack is a group of storage shards, the unit a bound cache member serves.
type Rack struct {
	Name   string  `json:"name"`
	Shards []Shard `json:"shards"`
}

// Shard is one storage server (a Redis instance fronted by its shim).
type Shard struct {
	Name    string `json:"name"`
	Address string `json:"address,omitempty"`
	// Redis is the host:port of the shard's Redis, where clients read the
	// keys no cache holds themselves (spec.dataPlane.directReads); empty
	// when they read them through the shim. Readers older than this field
	// reject a map that has it.
	Redis string `json:"redis,omitempty"`
	// DirectWrites lets clients that read Redis send plain writes of the
	// keys no cache may hold to it themselves
	// (spec.dataPlane.directWrites, package dataplane/heldkeys). Readers
	// older than this field reject a map that has it, so no shim that
	// does not record the keys a cache may hold serves under it.
	DirectWrites bool `json:"directWrites,omitempty"`
}

// Clone returns a deep copy of m.
func (m *Map) Clone() *Map {
	c := *m
	c.Layers = slices.Clone(m.Layers)
	for i := range c.Layers {
		c.Layers[i].Members = slices.Clone(m.Layers[i].Members)
	}
	c.Storage.Racks = slices.Clone(m.Storage.Racks)
	for i := range c.Storage.Racks {
		c.Storage.Racks[i].Shards = slices.Clone(m.Storage.Racks[i].Shards)
	}
	c.Copies = slices.Clone(m.Copies) // entries are never modified in place
	return &c
}

// MembersByState counts m's cache members (every layer's) by state.
func (m *Map) MembersByState() map[MemberState]int {
	out := map[MemberState]int{}
	for _, l := range m.Layers {
		for _, mb := range l.Members {
			out[mb.State]++
		}
	}
	return out
}

// Member returns the layer and member indexes of the member called name, or
// ok=false.
func (m *Map) Member(name string) (layer, member int, ok bool) {
	for l := range m.Layers {
		for i := range m.Layers[l].Members {
			if m.Layers[l].Members[i].Name == name {
				return l, i, true
			}
		}
	}
	return -1, -1, false
}

// StorageShard returns the rack and shard indexes of the storage shard
// called name, or ok=false.
func (m *Map) StorageShard(name string) (rack, shard int, ok bool) {
	for r := range m.Storage.Racks {
		for i := range m.Storage.Racks[r].Shards {
			if m.Storage.Racks[r].Shards[i].Name == name {
				return r, i, true
			}
		}
	}
	return -1, -1, false
}

// WithState returns the next version of m with member name in state, or m
// itself (and changed=false) when the member already is in that state.
func (m *Map) WithState(name string, state MemberState) (next *Map, changed bool, err error) {
	if !state.Valid() {
		return nil, false, fmt.Errorf("cannot set state of member %q: unknown state %q", name, state)
	}
	l, i, ok := m.Member(name)
	if !ok {
		return nil, false, fmt.Errorf("cannot set state of member %q: no such member", name)
	}
	if m.Layers[l].Members[i].State == state {
		return m, false, nil
	}
	next = m.Clone()
	next.Version++
	next.Layers[l].Members[i].State = state
	return next, true, nil
}

// Validate reports the first problem that makes m unusable.
func (m *Map) Validate() error {
	if m.Format != FormatVersion {
		return fmt.Errorf("invalid partition map: format %d, want %d", m.Format, FormatVersion)
	}
	if m.Version < 1 {
		return fmt.Errorf("invalid partition map: version %d, want >= 1", m.Version)
	}
	racks, err := m.Storage.validate()
	if err != nil {
		return fmt.Errorf("invalid partition map: %w", err)
	}
	ids := map[uint32]string{}
	names := map[string]bool{}
	seeds := map[uint64]string{}
	for _, l := range m.Layers {
		if err := l.validate(racks, ids, names); err != nil {
			return fmt.Errorf("invalid partition map: layer %q: %w", l.Name, err)
		}
		if other, dup := seeds[l.Seed]; dup {
			return fmt.Errorf("invalid partition map: layers %q and %q share seed %d; layers must hash independently", other, l.Name, l.Seed)
		}
		seeds[l.Seed] = l.Name
	}
	if err := m.validateDomains(); err != nil {
		return fmt.Errorf("invalid partition map: %w", err)
	}
	if err := m.validateSwitchLayers(); err != nil {
		return fmt.Errorf("invalid partition map: %w", err)
	}
	if err := m.validateCopies(); err != nil {
		return fmt.Errorf("invalid partition map: %w", err)
	}
	if err := m.validateReplayProtection(); err != nil {
		return fmt.Errorf("invalid partition map: %w", err)
	}
	return nil
}

func (l *Layer) validate(racks map[string]bool, ids map[uint32]string, names map[string]bool) error {
	if l.Name == "" {
		return errors.New("empty layer name")
	}
	if l.VirtualNodes < 1 || l.VirtualNodes > ring.MaxVirtualNodes {
		return fmt.Errorf("virtual nodes %d out of range [1, %d]", l.VirtualNodes, ring.MaxVirtualNodes)
	}
	if l.Entries < 0 || l.Entries > MaxLayerEntries {
		return fmt.Errorf("entries %d out of range [0, %d]", l.Entries, MaxLayerEntries)
	}
	bound := map[string]string{}
	for _, mb := range l.Members {
		if mb.Name == "" {
			return errors.New("member with empty name")
		}
		if names[mb.Name] {
			return fmt.Errorf("duplicate member name %q", mb.Name)
		}
		names[mb.Name] = true
		if other, dup := ids[mb.ID]; dup {
			return fmt.Errorf("members %q and %q share id %d", other, mb.Name, mb.ID)
		}
		ids[mb.ID] = mb.Name
		if !mb.State.Valid() {
			return fmt.Errorf("member %q: unknown state %q", mb.Name, mb.State)
		}
		if mb.Capacity < 0 || math.IsNaN(mb.Capacity) || math.IsInf(mb.Capacity, 0) {
			return fmt.Errorf("member %q: capacity %v must be a non-negative number", mb.Name, mb.Capacity)
		}
		if !l.BoundToRacks {
			if mb.Rack != "" {
				return fmt.Errorf("member %q names rack %q but the layer is not bound to racks", mb.Name, mb.Rack)
			}
			continue
		}
		if !racks[mb.Rack] {
			return fmt.Errorf("member %q: unknown rack %q", mb.Name, mb.Rack)
		}
		if other, dup := bound[mb.Rack]; dup {
			return fmt.Errorf("members %q and %q are both bound to rack %q", other, mb.Name, mb.Rack)
		}
		bound[mb.Rack] = mb.Name
	}
	return nil
}

func (s *Storage) validate() (map[string]bool, error) {
	if len(s.Racks) == 0 {
		return nil, errors.New("storage has no racks")
	}
	racks := map[string]bool{}
	shards := map[string]bool{}
	for _, r := range s.Racks {
		if r.Name == "" {
			return nil, errors.New("storage rack with empty name")
		}
		if racks[r.Name] {
			return nil, fmt.Errorf("duplicate storage rack %q", r.Name)
		}
		racks[r.Name] = true
		if len(r.Shards) == 0 {
			return nil, fmt.Errorf("storage rack %q has no shards", r.Name)
		}
		for _, sh := range r.Shards {
			if sh.Name == "" {
				return nil, fmt.Errorf("storage rack %q: shard with empty name", r.Name)
			}
			if shards[sh.Name] {
				return nil, fmt.Errorf("duplicate storage shard %q", sh.Name)
			}
			shards[sh.Name] = true
		}
	}
	return racks, nil
}
