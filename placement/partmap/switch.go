package partmap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/distcache/distcache/placement/hashing"
)

// MaxSwitchKeyLen is the longest key a switch-backed layer caches: what
// the switches' P4 parser extracts (wire.SwitchCacheable). Longer keys
// have no candidate in a switch-backed layer.
const MaxSwitchKeyLen = 32

// A switch-backed layer (Layer.Switch) is served by programmable switches
// running the cache switch program (stratum_pipelines). A member's Address
// is the switch's coherence port, which storage shims send INVALIDATE and
// UPDATE to; reads of a key stored in shard g (ShardIndex) go to that
// port + 1 + g, the switch's read port for the shard, which relays misses
// to the shard's shim.
//
// A key's place on a switch-backed layer's ring is the 64 high bits of its
// digest (SwitchPoint), the value a switch reads from the packet's
// key_digest, so that a client-leaf switch can find a key's spine with a
// range table instead of hashing the key (SwitchArcs). The digest is one hash for
// every switch-backed layer, so at most one switch-backed layer may place
// keys on its ring (the others bound to racks), or two layers would
// partition keys alike (§3.1).

// SwitchPoint is key's position on a switch-backed layer's ring: the 64
// high bits of its digest (key_digest[127:64]).
func SwitchPoint(key string) uint64 {
	d := hashing.DigestOfString(key)
	return binary.BigEndian.Uint64(d[:8])
}

// SwitchArc is an arc of a switch-backed layer's ring: the positions
// (SwitchPoint) Low to High inclusive, whose keys Member (an index into
// Layer.Members) owns.
type SwitchArc struct {
	Low, High uint64
	Member    int
}

// SwitchArcs returns the arcs of switch-backed layer's ring in position
// order, adjacent arcs of one member merged: the key points each owning
// member (Active or Fenced) owns, exactly as Owner places keys, for a
// client-leaf switch to match a key's digest against as ranges. A layer
// that is not switch-backed, or bound to racks, or without an owning
// member, has none (a bound layer places a key by its rack first).
func (p *Placement) SwitchArcs(layer int) []SwitchArc {
	cl := &p.layers[layer]
	if !cl.switched || cl.byRack != nil {
		return nil
	}
	arcs := cl.ring.Arcs(nil)
	out := make([]SwitchArc, len(arcs))
	for i, a := range arcs {
		out[i] = SwitchArc{Low: a.Low, High: a.High, Member: cl.byRing[a.Member]}
	}
	return out
}

// RackMember is the index of the owning member (Active or Fenced) of
// bound layer's rack (its index in Storage.Racks), or -1 when the rack's
// member does not own keys, or the layer is not bound to racks. While it
// is -1 the rack's keys fall back to the layer's ring (Owner).
func (p *Placement) RackMember(layer, rack int) int {
	cl := &p.layers[layer]
	if cl.byRack == nil || rack < 0 || rack >= len(cl.byRack) {
		return -1
	}
	return cl.byRack[rack]
}

// RackShards is the global index (ShardIndex) of the first shard of rack
// and the rack's number of shards.
func (p *Placement) RackShards(rack int) (first, n int) {
	return p.shardBase[rack], len(p.m.Storage.Racks[rack].Shards)
}

// Switched reports whether layer is switch-backed.
func (p *Placement) Switched(layer int) bool { return p.layers[layer].switched }

// ShardIndex is the global index of key's storage shard: the shards of
// the racks before its rack, plus its shard in its rack.
func (p *Placement) ShardIndex(key string) int {
	r, s := p.Shard(key)
	return p.shardBase[r] + s
}

// SwitchReadPort is the read port, for the shard of global index shard,
// of a switch whose coherence port is base.
func SwitchReadPort(base uint16, shard int) uint16 { return base + 1 + uint16(shard) }

// validateSwitchLayers checks that at most one switch-backed layer places
// keys on its ring, and that every switch member's address leaves room
// for a read port per shard.
func (m *Map) validateSwitchLayers() error {
	shards := 0
	for _, r := range m.Storage.Racks {
		shards += len(r.Shards)
	}
	ringed := ""
	for _, l := range m.Layers {
		if !l.Switch {
			continue
		}
		if !l.BoundToRacks {
			if ringed != "" {
				return fmt.Errorf("switch-backed layers %q and %q both place keys on a ring by key digest; bind one of them to racks", ringed, l.Name)
			}
			ringed = l.Name
		}
		for _, mb := range l.Members {
			if mb.Address == "" {
				continue
			}
			a, err := netip.ParseAddrPort(mb.Address)
			if err != nil || !a.Addr().Is4() {
				return fmt.Errorf("switch member %q: address %q is not an IPv4 address and port", mb.Name, mb.Address)
			}
			if int(a.Port())+shards > 65535 {
				return fmt.Errorf("switch member %q: port %d leaves no room for %d read ports", mb.Name, a.Port(), shards)
			}
		}
	}
	return nil
}

// errSwitchCopies refuses decided copies on switch members.
var errSwitchCopies = errors.New("decided copies on a switch-backed layer's member")
