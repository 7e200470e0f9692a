package shim

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/distcache/distcache/dataplane/peers"
	"github.com/distcache/distcache/placement/partmap"
)

// mapState is a partition map compiled for the shim: the placement, this
// shim's shard and every member's parsed data-plane address.
type mapState struct {
	p           *partmap.Placement
	version     int64
	rack, shard int          // this shim's shard in Storage.Racks
	addrs       *peers.Table // members' addresses; unknown without a usable one
	// directWrites: clients write the keys no cache may hold to this
	// shard's Redis themselves (Shard.DirectWrites), so a write that finds
	// no copy takes its key out of the set (write.go, trim).
	directWrites bool
}

// pastMap is a map that a newer one replaced, with when this shim installed
// its successor: its owners of a key stopped owning it no earlier.
type pastMap struct {
	st       *mapState
	replaced time.Time
}

// mapView is what requests read: the current map, the maps it replaced
// within PrevMapGrace (newest first), and since when each member that is
// not Active in the current map has been so in every map this shim
// installed. It is immutable; SetMap swaps it.
type mapView struct {
	cur  *mapState
	past []pastMap
	// inactiveSince maps the name of each member of cur that is not Active
	// (Fenced or Failed) to when this shim first installed a map, of the
	// unbroken run up to cur, in which it was not Active.
	inactiveSince map[string]time.Time
	// writesFrom is when the shim starts phase 1 of writes: releaseAfter
	// after its first map, so that no node still serves under a map older
	// than the first this shim knew, whose owners it cannot invalidate.
	writesFrom time.Time
	// replaced is closed when SetMap installs the next view: a write
	// waiting for phase 1 then re-reads the owners (invalidate.go).
	replaced chan struct{}
	// switches are the coherence addresses of the switch-backed members of
	// cur and past: the peers the transport exchanges coherence messages
	// with unsigned (transport.Config.Unsigned), as a switch cannot
	// compute the data-plane MAC.
	switches map[netip.AddrPort]bool
}

// owner is a cache node that may hold a copy of a key.
type owner struct {
	name string
	addr netip.AddrPort
	// releaseAt, when set, is when the shim stops waiting for the owner's
	// acknowledgement: the owner left the key's ownership, or was fenced,
	// at least the serving lease and the map's delivery lag earlier, so it
	// can no longer serve the key from a copy (docs/dataplane.md,
	// Fencing). A release time already past means one best-effort
	// INVALIDATE, not awaited. Zero: an Active owner, waited for until
	// InvalidateTimeout.
	releaseAt time.Time
	// byLease: releaseAt is when every lease the shim granted the owner
	// ends (leases.go), sooner than the map would release it; releasing it
	// then moves the owner to a new epoch.
	byLease bool
}

// SetMap installs partition map p. It fails when p has no shard named
// Config.Shard or when p is older than the current map. The maps it
// replaces stay in use for invalidations for PrevMapGrace: a node that
// owned a key under one may still hold a copy (DistCache §4.4).
func (s *Shim) SetMap(p *partmap.Placement) error {
	st, err := s.compileMap(p)
	if err != nil {
		return err
	}
	s.mapMu.Lock()
	defer s.mapMu.Unlock()
	now := time.Now()
	old := s.view.Load()
	next := &mapView{cur: st, replaced: make(chan struct{})}
	switch {
	case old == nil:
		next.writesFrom = now.Add(s.releaseAfter())
	case st.version < old.cur.version:
		return fmt.Errorf("cannot set partition map version %d: older than the current version %d", st.version, old.cur.version)
	case st.version == old.cur.version:
		next.past, next.writesFrom = old.past, old.writesFrom
	default:
		next.past = append([]pastMap{{st: old.cur, replaced: now}}, old.past...)
		next.writesFrom = old.writesFrom
	}
	for len(next.past) > 0 && now.Sub(next.past[len(next.past)-1].replaced) >= s.pastMapGrace() {
		next.past = next.past[:len(next.past)-1]
	}
	next.inactiveSince = inactiveSince(st, old, now)
	next.switches = switchAddrs(next)
	s.view.Store(next)
	s.ep.FollowMap(st.p.Map()) // the map's replay protection (transport.Config.Replay the floor)
	if old != nil {
		close(old.replaced)
	}
	if s.holders != nil {
		s.holders.wake() // new members are flushed before writes skip them
	}
	s.metrics.mapVersion.Set(float64(st.version))
	s.log.Info("partition map set", "version", st.version, "replaced_maps_kept", len(next.past))
	return nil
}

// inactiveSince records, for every member of st that is not Active, since
// when this shim has seen it so: the time old recorded, or now.
func inactiveSince(st *mapState, old *mapView, now time.Time) map[string]time.Time {
	out := map[string]time.Time{}
	for _, layer := range st.p.Map().Layers {
		for _, mb := range layer.Members {
			if mb.State == partmap.Active {
				continue
			}
			since := now
			if old != nil {
				if t, ok := old.inactiveSince[mb.Name]; ok {
					since = t
				}
			}
			out[mb.Name] = since
		}
	}
	return out
}

// compileMap finds this shim's shard in p and parses the members' addresses.
func (s *Shim) compileMap(p *partmap.Placement) (*mapState, error) {
	if p == nil {
		return nil, fmt.Errorf("cannot set partition map: nil placement")
	}
	m := p.Map()
	st := &mapState{p: p, version: p.Version()}
	var ok bool
	if st.rack, st.shard, ok = m.StorageShard(s.cfg.Shard); !ok {
		return nil, fmt.Errorf("cannot set partition map version %d: no storage shard %q", p.Version(), s.cfg.Shard)
	}
	st.directWrites = m.Storage.Racks[st.rack].Shards[st.shard].DirectWrites
	// A member without a usable address can neither FETCH from this shim
	// (its source matches no owner) nor be invalidated: it is skipped.
	var prev *peers.Table
	if old := s.view.Load(); old != nil {
		prev = old.cur.addrs
	}
	st.addrs = peers.Resolve(m, s.log, peers.WithPrevious(prev))
	return st, nil
}

// switchAddrs collects the coherence addresses of v's switch members.
func switchAddrs(v *mapView) map[netip.AddrPort]bool {
	var out map[netip.AddrPort]bool
	for _, st := range v.states() {
		for _, l := range st.p.Map().Layers {
			if !l.Switch {
				continue
			}
			for _, mb := range l.Members {
				if a, err := netip.ParseAddrPort(mb.Address); err == nil {
					if out == nil {
						out = map[netip.AddrPort]bool{}
					}
					out[a] = true
				}
			}
		}
	}
	return out
}

// states are the maps v invalidates under: the current one, then the ones
// it replaced, newest first.
func (v *mapView) states() []*mapState {
	out := make([]*mapState, 0, 1+len(v.past))
	out = append(out, v.cur)
	for _, pm := range v.past {
		out = append(out, pm.st)
	}
	return out
}

// isSwitch reports whether peer is a switch member's coherence address
// in the current map or one it replaced (transport.Config.Unsigned).
func (s *Shim) isSwitch(peer netip.AddrPort) bool {
	v := s.view.Load()
	return v != nil && v.switches[peer]
}

// ownsKey reports whether st stores key on this shim's shard.
func (st *mapState) ownsKey(key string) bool {
	r, sh := st.p.Shard(key)
	return r == st.rack && sh == st.shard
}

// isServingOwner reports whether src is key's Active owner in some layer
// of st: the node that may fetch the key, and that every write invalidates
// and waits for.
func (st *mapState) isServingOwner(key string, src netip.AddrPort) bool {
	var buf [8]partmap.Candidate
	for _, c := range st.p.Candidates(key, buf[:0]) {
		if !c.Fenced && st.addrs.Member(c.Layer, c.Member) == src {
			return true
		}
	}
	return false
}

func hasOwner(os []owner, a netip.AddrPort) bool {
	for _, o := range os {
		if o.addr == a {
			return true
		}
	}
	return false
}

// owners returns the nodes a write of key at now must invalidate, each
// address once: its owners under the current map — Active ones waited for,
// Fenced ones until they have been fenced for release — and its owners
// under the maps replaced less than grace before now, waited for until
// release after they stopped owning the key (or were fenced, if earlier).
func (v *mapView) owners(key string, now time.Time, release, grace time.Duration) []owner {
	var buf [8]partmap.Candidate
	m := v.cur.p.Map()
	os := make([]owner, 0, 4)
	for _, c := range v.cur.p.Candidates(key, buf[:0]) {
		a := v.cur.addrs.Member(c.Layer, c.Member)
		if !a.IsValid() || hasOwner(os, a) {
			continue
		}
		o := owner{name: m.Layers[c.Layer].Members[c.Member].Name, addr: a}
		if since, ok := v.inactiveSince[o.name]; ok {
			o.releaseAt = since.Add(release)
		}
		os = append(os, o)
	}
	for _, pm := range v.past { // newest first: the latest time each stopped owning key
		if now.Sub(pm.replaced) >= grace {
			break
		}
		pmm := pm.st.p.Map()
		for _, c := range pm.st.p.Candidates(key, buf[:0]) {
			a := pm.st.addrs.Member(c.Layer, c.Member)
			if !a.IsValid() || hasOwner(os, a) {
				continue
			}
			o := owner{name: pmm.Layers[c.Layer].Members[c.Member].Name, addr: a}
			left := pm.replaced
			if since, ok := v.inactiveSince[o.name]; ok && since.Before(left) {
				left = since
			}
			o.releaseAt = left.Add(release)
			os = append(os, o)
		}
	}
	return os
}

// releaseAfter is how long after a node left a key's ownership, or was
// fenced, the shim stops waiting for its acknowledgements: the node's
// serving lease, plus how stale the node's map source may be when it reads
// it (Config.MapDeliveryLag), plus the margin for clocks that run at
// slightly different rates that the shim's grants add (leaseMargin). A
// node serves a shim's keys under the shim's grants only while its map is
// at least as new as the shim's was when it granted them (shimlease.go in
// package cachenode), so every lease it holds under a map older than the
// one that moved the key ends by then too.
func (s *Shim) releaseAfter() time.Duration {
	return s.cfg.Lease + s.cfg.MapDeliveryLag + leaseMargin(s.cfg.Lease)
}

// pastMapGrace is how long a replaced map's owners are still invalidated:
// Config.PrevMapGrace, and at least until they are released.
func (s *Shim) pastMapGrace() time.Duration { return max(s.cfg.PrevMapGrace, s.releaseAfter()) }
