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
	rack, shard int                     // this shim's shard in Storage.Racks
	addrs       *peers.Table            // members' addresses; unknown without a usable one
	active      map[netip.AddrPort]bool // addresses of the Active members
}

// mapView is what requests read: the current map and, for PrevMapGrace
// after a change, the one it replaced. It is immutable; SetMap swaps it.
type mapView struct {
	cur     *mapState
	prev    *mapState // nil before the first change
	changed time.Time // when cur replaced prev
	// replaced is closed when SetMap installs the next view: a write
	// waiting for phase 1 then re-reads the owners (invalidate.go).
	replaced chan struct{}
}

// owner is a cache node that may hold a copy of a key.
type owner struct {
	name string
	addr netip.AddrPort
	// bestEffort marks an owner under the previous map that is no longer an
	// active member: it was removed as failed, so it is sent one
	// INVALIDATE without waiting for its acknowledgement. A node the
	// control plane removed drops its copies when it loads the map, and
	// clients no longer route to it; waiting for a dead node would refuse
	// every write of its keys for the whole grace period.
	bestEffort bool
}

// SetMap installs partition map p. It fails when p has no shard named
// Config.Shard or when p is older than the current map. The map it
// replaces stays in use for invalidations for PrevMapGrace: a node that
// owned a key under it may still hold a copy (DistCache §4.4).
func (s *Shim) SetMap(p *partmap.Placement) error {
	st, err := s.compileMap(p)
	if err != nil {
		return err
	}
	s.mapMu.Lock()
	defer s.mapMu.Unlock()
	next := &mapView{cur: st, changed: time.Now(), replaced: make(chan struct{})}
	old := s.view.Load()
	if old != nil {
		switch {
		case st.version < old.cur.version:
			return fmt.Errorf("cannot set partition map version %d: older than the current version %d", st.version, old.cur.version)
		case st.version == old.cur.version:
			next.prev, next.changed = old.prev, old.changed
		default:
			next.prev = old.cur
		}
	}
	s.view.Store(next)
	if old != nil {
		close(old.replaced)
	}
	s.metrics.mapVersion.Set(float64(st.version))
	s.log.Info("partition map set", "version", st.version)
	return nil
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
	// A member without a usable address can neither FETCH from this shim
	// (its source matches no owner) nor be invalidated: it is skipped.
	st.addrs = peers.Resolve(m, s.log)
	st.active = make(map[netip.AddrPort]bool)
	for l, layer := range m.Layers {
		for i, mb := range layer.Members {
			if a := st.addrs.Member(l, i); a.IsValid() && mb.State == partmap.Active {
				st.active[a] = true
			}
		}
	}
	return st, nil
}

// ownsKey reports whether st stores key on this shim's shard.
func (st *mapState) ownsKey(key string) bool {
	r, sh := st.p.Shard(key)
	return r == st.rack && sh == st.shard
}

// appendOwners appends key's owner in every layer of st that has an address
// and is not in dst yet.
func (st *mapState) appendOwners(key string, dst []owner) []owner {
	var buf [8]partmap.Candidate
	m := st.p.Map()
	for _, c := range st.p.Candidates(key, buf[:0]) {
		a := st.addrs.Member(c.Layer, c.Member)
		if !a.IsValid() || hasOwner(dst, a) {
			continue
		}
		dst = append(dst, owner{name: m.Layers[c.Layer].Members[c.Member].Name, addr: a})
	}
	return dst
}

// isOwner reports whether src is key's owner in some layer of st.
func (st *mapState) isOwner(key string, src netip.AddrPort) bool {
	var buf [8]partmap.Candidate
	for _, c := range st.p.Candidates(key, buf[:0]) {
		if st.addrs.Member(c.Layer, c.Member) == src {
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

// owners returns the nodes a write of key at now must invalidate: its
// owners under the current map and, within grace of the last change, under
// the previous one, each address once. Previous owners that are not active
// members of the current map are best effort.
func (v *mapView) owners(key string, now time.Time, grace time.Duration) []owner {
	os := v.cur.appendOwners(key, make([]owner, 0, 4))
	if v.prev != nil && now.Sub(v.changed) < grace {
		n := len(os)
		os = v.prev.appendOwners(key, os)
		for i := n; i < len(os); i++ {
			os[i].bestEffort = !v.cur.active[os[i].addr]
		}
	}
	return os
}
