package partmap

import (
	"fmt"
	"slices"

	"github.com/distcache/distcache/placement/ring"
)

// Failure domains.
//
// Each layer hashes keys independently (§3.1), so a key's owners in two
// layers land on the same machine with probability about one in the number
// of machines: with three Kubernetes nodes, a third of the keys lose every
// cached copy when one node goes. A map whose members carry their Host (and
// Zone) therefore places a key's candidates on distinct hosts, and in
// distinct zones, wherever the members allow it.
//
// A key's owner in a layer is the first member met walking the layer's
// ring clockwise from the key's position whose host, and zone, no earlier
// layer's choice for the key uses. The walk asks for a new zone and a new
// host while the layer has an owning member in both, else for a new host
// while it has one there, else takes the ring's owner as without domains.
// A layer bound to racks keeps its rack's member (its choice goes first);
// switch-backed layers are placed without domains.
//
// The domains a layer avoids are those of the earlier layers' *home*
// owners: the owners the key would have with every member up, walked on a
// ring of all members, Failed ones included. So a member's failure moves
// only the keys it owned, in its own layer, and none between survivors, as
// without domains (§4.4): another layer's walk never depended on which
// members of this one are up, and in this layer a Failed member's points
// are only skipped, which changes nothing for a key whose walk stopped
// before them. The price is that, while a member is Failed, its keys'
// new owner may share a host with their owner in another layer.
//
// Members without a host are on a host of their own; without a zone, in a
// zone of their own. Every member of a host must name the same zone.

// maxDomainLayers bounds the layers whose choices a walk avoids: a key's
// candidates in further layers are placed without domains.
const maxDomainLayers = 16

// domains is a compiled map's failure-domain index.
type domains struct {
	// hostZone is, by host id, the zone id of its members (-1: none).
	hostZone []int32
}

// layerDomains is a compiled layer's view of its members' domains.
type layerDomains struct {
	host, zone []int32 // by member index; -1: unknown
	// full is the ring of every member, Failed ones included: the home
	// owners' ring. Nil when no member is Failed (the layer's ring is
	// that ring).
	full *ring.Ring
	// owning counts the owning members, all every member, by domain.
	owning, all domainCounts
}

// domainCounts counts a set of a layer's members by host and by zone.
type domainCounts struct {
	total          int32
	byHost, byZone []int32 // by host and zone id
}

// indexDomains interns the hosts and zones of m's members and returns
// the index with each layer's member domains, or ok=false when no member
// has one (the placement then ignores domains entirely).
func indexDomains(m *Map) (d domains, layers []layerDomains, ok bool) {
	hosts, zones := map[string]int32{}, map[string]int32{}
	intern := func(ids map[string]int32, name string) int32 {
		if name == "" {
			return -1
		}
		id, seen := ids[name]
		if !seen {
			id = int32(len(ids))
			ids[name] = id
		}
		return id
	}
	layers = make([]layerDomains, len(m.Layers))
	for l, layer := range m.Layers {
		ld := &layers[l]
		ld.host = make([]int32, len(layer.Members))
		ld.zone = make([]int32, len(layer.Members))
		for i, mb := range layer.Members {
			ld.host[i], ld.zone[i] = intern(hosts, mb.Host), intern(zones, mb.Zone)
		}
	}
	if len(hosts) == 0 && len(zones) == 0 {
		return domains{}, nil, false
	}
	d.hostZone = make([]int32, len(hosts))
	for i := range d.hostZone {
		d.hostZone[i] = -1
	}
	for l, layer := range m.Layers {
		ld := &layers[l]
		ld.owning = newDomainCounts(len(hosts), len(zones))
		ld.all = newDomainCounts(len(hosts), len(zones))
		for i, mb := range layer.Members {
			if h := ld.host[i]; h >= 0 {
				d.hostZone[h] = ld.zone[i] // validateDomains: one zone a host
			}
			ld.all.add(ld.host[i], ld.zone[i])
			if mb.State.Owns() {
				ld.owning.add(ld.host[i], ld.zone[i])
			}
		}
	}
	return d, layers, true
}

func newDomainCounts(hosts, zones int) domainCounts {
	return domainCounts{byHost: make([]int32, hosts), byZone: make([]int32, zones)}
}

func (c *domainCounts) add(host, zone int32) {
	c.total++
	if host >= 0 {
		c.byHost[host]++
	}
	if zone >= 0 {
		c.byZone[zone]++
	}
}

// usedDomains are the hosts and zones of a key's choices so far.
type usedDomains struct {
	hosts, zones   [maxDomainLayers]int32
	nHosts, nZones int
}

func (u *usedDomains) add(host, zone int32) {
	if host >= 0 && !u.hasHost(host) && u.nHosts < maxDomainLayers {
		u.hosts[u.nHosts] = host
		u.nHosts++
	}
	if zone >= 0 && !u.hasZone(zone) && u.nZones < maxDomainLayers {
		u.zones[u.nZones] = zone
		u.nZones++
	}
}

func (u *usedDomains) hasHost(h int32) bool {
	for _, x := range u.hosts[:u.nHosts] {
		if x == h {
			return true
		}
	}
	return false
}

func (u *usedDomains) hasZone(z int32) bool {
	for _, x := range u.zones[:u.nZones] {
		if x == z {
			return true
		}
	}
	return false
}

// Tiers of a walk: what it asks of a member.
const (
	anyDomain   = iota // the ring's owner, as without domains
	newHost            // a host no earlier choice uses
	newHostZone        // and a zone no earlier choice uses
)

// tier is what a walk over the members counted by c can ask for, given
// the choices u: a new zone and host if one of them has both, else a new
// host if one has it, else nothing.
func (u *usedDomains) tier(d *domains, c *domainCounts) int {
	if u.nHosts == 0 && u.nZones == 0 {
		return anyDomain
	}
	onUsedHosts := int32(0)
	for _, h := range u.hosts[:u.nHosts] {
		onUsedHosts += c.byHost[h]
	}
	newHosts := c.total - onUsedHosts
	if u.nZones > 0 {
		// Members in a used zone, or on a used host of another zone.
		taken := int32(0)
		for _, z := range u.zones[:u.nZones] {
			taken += c.byZone[z]
		}
		for _, h := range u.hosts[:u.nHosts] {
			if z := d.hostZone[h]; z < 0 || !u.hasZone(z) {
				taken += c.byHost[h]
			}
		}
		if c.total-taken > 0 {
			return newHostZone
		}
	} else if newHosts > 0 {
		return newHostZone // no zone is used: a new host is all it takes
	}
	if newHosts > 0 {
		return newHost
	}
	return anyDomain
}

// accepts reports whether member m of layer ld meets tier t.
func (u *usedDomains) accepts(ld *layerDomains, m, t int) bool {
	switch t {
	case newHostZone:
		if z := ld.zone[m]; z >= 0 && u.hasZone(z) {
			return false
		}
		fallthrough
	case newHost:
		h := ld.host[m]
		return h < 0 || !u.hasHost(h)
	}
	return true
}

// walk returns the member of layer ld that a key at ring position h gets
// on r given the choices u: the first one clockwise that meets the tier
// the members counted by c allow. byRing maps r's member indexes to member
// indexes (nil: the same). -1 for an empty ring.
func (p *Placement) walk(ld *layerDomains, r *ring.Ring, byRing []int, c *domainCounts, h uint64, u *usedDomains) int {
	i := r.FirstPoint(h)
	if i < 0 {
		return -1
	}
	member := func(i int) int {
		if byRing == nil {
			return r.PointOwner(i)
		}
		return byRing[r.PointOwner(i)]
	}
	first := member(i)
	t := u.tier(&p.domains, c)
	if t == anyDomain || u.accepts(ld, first, t) {
		return first
	}
	for range r.Points() - 1 {
		if i++; i == r.Points() {
			i = 0
		}
		if m := member(i); u.accepts(ld, m, t) {
			return m
		}
	}
	return first // unreachable: the tier says some member meets it
}

// domainOwners runs the failure-domain placement of key through layers
// [0, upto] (clamped to the layers) and appends to dst each layer's owner:
// -1 for a switch-backed layer (placed without domains) or a layer without
// an owning member.
func (p *Placement) domainOwners(key string, upto int, dst []int) []int {
	var u usedDomains
	if b := p.boundLayer; b >= 0 {
		if home := p.layers[b].byRackAll[p.rack(key)]; home >= 0 {
			ld := &p.layerDomains[b]
			u.add(ld.host[home], ld.zone[home])
		}
	}
	for l := 0; l <= upto && l < len(p.layers); l++ {
		cl := &p.layers[l]
		switch {
		case cl.switched: // placed without domains (Owners, switchOwner)
			dst = append(dst, -1)
			continue
		case cl.byRack != nil:
			dst = append(dst, p.ringOwner(l, key))
			continue
		}
		ld := &p.layerDomains[l]
		h := cl.ring.KeyHash(key)
		owner := p.walk(ld, cl.ring, cl.byRing, &ld.owning, h, &u)
		dst = append(dst, owner)
		home := owner
		if ld.full != nil {
			home = p.walk(ld, ld.full, nil, &ld.all, h, &u)
		}
		if home >= 0 {
			u.add(ld.host[home], ld.zone[home])
		}
	}
	return dst
}

// compileDomains indexes the members' failure domains into p, and builds
// the ring of every member of each layer that has Failed members, reusing
// prev's (a placement compiled earlier, or nil) when it has the same.
func (p *Placement) compileDomains(prev *Placement) error {
	d, layers, ok := indexDomains(p.m)
	if !ok {
		return nil
	}
	for l := range layers {
		cl := &p.layers[l]
		if cl.switched || cl.byRack != nil || len(cl.byRing) == len(p.m.Layers[l].Members) {
			continue
		}
		names := make([]string, len(p.m.Layers[l].Members))
		for i, mb := range p.m.Layers[l].Members {
			names[i] = mb.Name
		}
		full, err := fullRing(prev, l, cl.ring, names)
		if err != nil {
			return fmt.Errorf("layer %q: %w", p.m.Layers[l].Name, err)
		}
		layers[l].full = full
	}
	p.domains, p.layerDomains = d, layers
	return nil
}

// fullRing returns the ring of every member (names) of layer l, whose
// owning members' ring is owning: prev's when it has one with the same
// seed, points and members, else owning's points with the others'.
func fullRing(prev *Placement, l int, owning *ring.Ring, names []string) (*ring.Ring, error) {
	if prev != nil && l < len(prev.layers) {
		for _, r := range []*ring.Ring{prev.layers[l].ring, prev.fullRingOf(l)} {
			if r != nil && r.Seed() == owning.Seed() && r.VirtualNodes() == owning.VirtualNodes() && slices.Equal(r.Members(), names) {
				return r, nil
			}
		}
	}
	return owning.WithMembers(names)
}

// fullRingOf returns the ring of every member of p's layer l, if p built
// one.
func (p *Placement) fullRingOf(l int) *ring.Ring {
	if l >= len(p.layerDomains) {
		return nil
	}
	return p.layerDomains[l].full
}

// validateDomains checks the members' domains: names of at most 253
// bytes, and every member of a host in one zone.
func (m *Map) validateDomains() error {
	zoneOf := map[string]string{}
	for _, l := range m.Layers {
		for _, mb := range l.Members {
			if len(mb.Host) > 253 || len(mb.Zone) > 253 {
				return fmt.Errorf("member %q: host or zone longer than 253 bytes", mb.Name)
			}
			if mb.Host == "" {
				continue
			}
			if z, seen := zoneOf[mb.Host]; seen && z != mb.Zone {
				return fmt.Errorf("member %q: host %q is in zone %q, and in zone %q for another member", mb.Name, mb.Host, mb.Zone, z)
			}
			zoneOf[mb.Host] = mb.Zone
		}
	}
	return nil
}

// HostZone returns the zone of m's members on host ("" when they name
// none) and whether any member is on it; every member of a host names
// the same zone (validateDomains).
func (m *Map) HostZone(host string) (zone string, ok bool) {
	for _, l := range m.Layers {
		for _, mb := range l.Members {
			if mb.Host == host {
				return mb.Zone, true
			}
		}
	}
	return "", false
}

// WithoutDomains returns a copy of m whose members name no host or zone:
// its keys placed as before failure domains.
func (m *Map) WithoutDomains() *Map {
	c := m.Clone()
	for l := range c.Layers {
		for i := range c.Layers[l].Members {
			c.Layers[l].Members[i].Zone, c.Layers[l].Members[i].Host = "", ""
		}
	}
	return c
}

// SoleHost returns the host of every member among cands when they are
// all on one host of m (the only host whose loss takes every cached copy
// of their key), else "". A member without a host is on a host of its
// own.
func SoleHost(m *Map, cands []Candidate) string {
	host := ""
	for i, c := range cands {
		h := m.Layers[c.Layer].Members[c.Member].Host
		if h == "" || (i > 0 && h != host) {
			return ""
		}
		host = h
	}
	return host
}
