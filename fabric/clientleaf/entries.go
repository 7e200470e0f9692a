package clientleaf

import (
	"fmt"
	"net/netip"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/distcache/distcache/placement/partmap"
	pipelines "github.com/distcache/distcache/stratum_pipelines"
	"github.com/distcache/distcache/stratum_pipelines/p4entity"
)

// arcPriority is every spine_owner entry's priority: the ring's arcs do
// not overlap.
const arcPriority = 1

// ids are the P4Runtime ids of the client leaf program's objects the
// controller writes, looked up by name in its P4Info.
type ids struct {
	clientReadPort, spineOwner, shardLeaf uint32
	readPort, spine, leaf                 uint32
	spineOwnerSize                        int64
}

func lookupIDs(info *p4configv1.P4Info) (ids, error) {
	var id ids
	err := pipelines.ObjectIDs(info,
		pipelines.IDRef{Dst: &id.clientReadPort, Name: "client_read_port"}, pipelines.IDRef{Dst: &id.spineOwner, Name: "spine_owner"},
		pipelines.IDRef{Dst: &id.shardLeaf, Name: "shard_leaf"}, pipelines.IDRef{Dst: &id.readPort, Name: "read_port"},
		pipelines.IDRef{Dst: &id.spine, Name: "spine"}, pipelines.IDRef{Dst: &id.leaf, Name: "leaf"})
	if err != nil {
		return id, fmt.Errorf("cannot program the client leaf: %w", err)
	}
	for _, t := range info.Tables {
		if t.Preamble.Id == id.spineOwner {
			id.spineOwnerSize = t.Size
		}
	}
	return id, nil
}

// entries are the table entries a client leaf at addr needs under p:
//
//   - client_read_port: the leaf's read port of every storage shard g
//     (partmap.SwitchReadPort of its port) → read_port(g);
//   - spine_owner: every arc of the switch layer that places keys on a
//     ring (partmap.SwitchArcs), owned by an Active member → spine(id,
//     address, coherence port) — a Fenced member serves no reads, so its
//     arcs have no entry and their keys go to the storage leaf;
//   - shard_leaf: every shard of a rack whose member of the rack-bound
//     switch layer is Active → leaf(id, address, coherence port). While
//     a rack's member is not, the map places the rack's keys on the
//     layer's ring, per key, which an exact table on the shard cannot
//     express: the rack's shards have no entry and go to their spine.
//
// A layer of software cache nodes is no candidate of the leaf: only
// switches are addressed by read port.
func (id ids) entries(p *partmap.Placement, addr netip.AddrPort) ([]*p4v1.Entity, error) {
	m := p.Map()
	spineLayer, leafLayer := -1, -1
	for l, layer := range m.Layers {
		switch {
		case !layer.Switch:
		case !layer.BoundToRacks:
			spineLayer = l
		case leafLayer >= 0:
			return nil, fmt.Errorf("cannot program the client leaf: layers %q and %q are both rack-bound switch layers; a client leaf chooses between one spine and one storage leaf", m.Layers[leafLayer].Name, layer.Name)
		default:
			leafLayer = l
		}
	}
	var out []*p4v1.Entity
	a4 := addr.Addr().As4()
	for r := range m.Storage.Racks {
		first, n := p.RackShards(r)
		for g := first; g < first+n; g++ {
			if int(addr.Port())+1+g > 65535 {
				return nil, fmt.Errorf("cannot program the client leaf: its port %d leaves no read port for shard %d", addr.Port(), g)
			}
			out = append(out, p4entity.TableEntry(id.clientReadPort, id.readPort,
				[][]byte{canonical(a4[:]), u16(partmap.SwitchReadPort(addr.Port(), g))}, u32(uint32(g))))
		}
	}
	if spineLayer >= 0 {
		arcs := 0
		for _, a := range p.SwitchArcs(spineLayer) {
			target, ok, err := switchTarget(m.Layers[spineLayer].Members[a.Member])
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			if arcs++; int64(arcs) > id.spineOwnerSize {
				return nil, fmt.Errorf("cannot program the client leaf: layer %q has more arcs than spine_owner's %d entries; give it fewer virtual nodes", m.Layers[spineLayer].Name, id.spineOwnerSize)
			}
			var match []*p4v1.FieldMatch
			if a.Low != 0 || a.High != ^uint64(0) { // one arc round the ring is "don't care": no match
				match = []*p4v1.FieldMatch{p4entity.Range(1, u64(a.Low), u64(a.High))} // key_point
			}
			out = append(out, p4entity.Entry(id.spineOwner, arcPriority, match, id.spine, target...))
		}
	}
	if leafLayer >= 0 {
		for r := range m.Storage.Racks {
			mb := p.RackMember(leafLayer, r)
			if mb < 0 {
				continue
			}
			target, ok, err := switchTarget(m.Layers[leafLayer].Members[mb])
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			first, n := p.RackShards(r)
			for g := first; g < first+n; g++ {
				out = append(out, p4entity.TableEntry(id.shardLeaf, id.leaf, [][]byte{u32(uint32(g))}, target...))
			}
		}
	}
	return out, nil
}

// switchTarget is the action parameters (id, addr, base_port) of a switch
// member that serves reads: Active, with an address. The map's
// validation makes every switch member's address an IPv4 one.
func switchTarget(mb partmap.Member) ([][]byte, bool, error) {
	if mb.State != partmap.Active || mb.Address == "" {
		return nil, false, nil
	}
	a, err := netip.ParseAddrPort(mb.Address)
	if err != nil || !a.Addr().Is4() {
		return nil, false, fmt.Errorf("cannot program the client leaf: switch member %q has address %q, not IPv4", mb.Name, mb.Address)
	}
	a4 := a.Addr().As4()
	return [][]byte{u32(mb.ID), canonical(a4[:]), u16(a.Port())}, true, nil
}

// canonical is P4Runtime's canonical bytestring of v: no leading zero
// bytes. The client leaf writes every value so, as a switch reads entries
// back: the controller compares what it reads with what it wants.
func canonical(v []byte) []byte { return pipelines.StripZeros(v) }

func u16(v uint16) []byte { return canonical(p4entity.U16(v)) }
func u32(v uint32) []byte { return canonical(p4entity.U32(v)) }
func u64(v uint64) []byte { return canonical(p4entity.U64(v)) }
