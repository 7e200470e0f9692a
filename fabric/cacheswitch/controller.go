// Package cacheswitch is the controller of one switch running the cache
// switch program of stratum_pipelines: the switch-backed member of a
// cache layer (DistCache §4), programmed through a fabric driver's
// session (Device).
//
// Renew follows the partition map, as a cache node's map reads do
// (docs/dataplane.md, Fencing): it reads the switch's clock, installs the
// member's identity, the addresses it serves (its coherence port and a
// read port per storage shard) and the shims' routes, removes every
// cached key the member no longer holds (all of them when it is not
// Active, or when the map is more than one version ahead of the last one
// applied to the switch), and only then renews the serving lease —
// lease_until in the switch's clock, counted from before the map was
// read — so a switch that loses its controller stops serving hits when
// the lease runs out, and one that restarts comes back with no valid copy
// and no lease.
//
// New controls a switch that was just given the pipeline (empty); Resume
// takes over a switch that already runs it from another controller — or
// from an earlier run of this one — and reads its state back (resume.go).
//
// Insert (every insertion interval, NetCache §4.3) takes the hot keys the
// switch reported in digests since the last one, gives the hottest that
// the member holds a slot — evicting the slots with the fewest hits when
// full — and sends a FETCH through the switch to the key's shim; the
// shim's FETCH_REPLY fills the slot in the data plane, and comes back to
// the controller as a packet-in. A slot whose fill was refused (a write
// raced it, the value is too big, the key is gone or has an expiry) is
// fetched again or released by the next interval. Values are never
// written by the controller.
package cacheswitch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/distcache/distcache/dataplane/peers"
	"github.com/distcache/distcache/placement/partmap"
	pipelines "github.com/distcache/distcache/stratum_pipelines"
	"github.com/distcache/distcache/stratum_pipelines/p4entity"
)

// Defaults of Config.
const (
	DefaultLease        = time.Second
	DefaultCapacity     = 1024
	DefaultHotThreshold = 8
	// MaxCapacity is the program's CACHE_SLOTS.
	MaxCapacity = 65536
)

// ErrMapBehind says a map read is older than the version the switch has
// applied already (another controller applied a newer one): it is not
// applied, and the lease is not renewed from it.
var ErrMapBehind = errors.New("the map read is older than the switch's")

// Device is the session the controller programs its switch through (a
// stratum.Conn).
type Device interface {
	Write(ctx context.Context, updates ...*p4v1.Update) error
	Read(ctx context.Context, filters ...*p4v1.Entity) ([]*p4v1.Entity, error)
	PacketOut(payload []byte) error
	PacketIns() <-chan []byte
	Digests() <-chan *p4v1.DigestList
}

// Config configures a controller.
type Config struct {
	// Member is the switch's member name in the partition map.
	Member string
	// Info is the P4Info of the program the switch runs.
	Info *p4configv1.P4Info
	// Lease is the serving lease, as every node and shim of the cluster
	// uses it (DefaultLease).
	Lease time.Duration
	// Capacity is the most keys the switch caches (DefaultCapacity, at
	// most MaxCapacity).
	Capacity int
	// HotThreshold is the Count-Min estimate at which the switch reports
	// an uncached key (DefaultHotThreshold).
	HotThreshold uint16
	Logger       *slog.Logger
}

// Stats counts what a controller did; every field is updated atomically.
type Stats struct {
	Renewals, LeaseDenied    atomic.Uint64
	Inserted, Evicted        atomic.Uint64
	Filled, FillRefused      atomic.Uint64
	HotKeys, Fetches, Errors atomic.Uint64
}

// Controller programs one cache switch.
type Controller struct {
	cfg Config
	log *slog.Logger
	dev Device
	id  ids

	// mu guards every field below; held across a Renew or an Insert, so
	// that a key is never inserted under a map that is no longer current.
	mu        sync.Mutex
	p         *partmap.Placement
	layer     int
	member    int
	addr      netip.AddrPort // the member's address: the switch's coherence port
	active    bool
	applied   int64 // the map version last applied to the switch (its keys released); 0: none
	installed installed
	slots     slotTable
	hot       map[string]uint16 // keys reported since the last Insert, by key
	nextSeq   uint64

	stats Stats
}

// installed is what the controller last wrote of the map.
type installed struct {
	identity  [2]uint64              // node id, map version; unset until written
	written   bool                   // identity written
	addresses map[netip.AddrPort]int // switch address -> shard (-1: coherence)
	routes    map[int]netip.AddrPort // shard -> shim
}

// New returns a controller of the switch behind dev, which has just been
// given the program's pipeline (empty tables, zero registers).
func New(ctx context.Context, dev Device, cfg Config) (*Controller, error) {
	c, err := newController(dev, cfg)
	if err != nil {
		return nil, err
	}
	if err := c.configure(ctx, false); err != nil {
		return nil, err
	}
	return c, nil
}

// newController is a controller of a switch whose state it does not know
// yet: every slot free, nothing installed.
func newController(dev Device, cfg Config) (*Controller, error) {
	if cfg.Lease == 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Capacity == 0 {
		cfg.Capacity = DefaultCapacity
	}
	if cfg.Capacity < 1 || cfg.Capacity > MaxCapacity {
		return nil, fmt.Errorf("cannot control switch %s: capacity %d outside 1…%d", cfg.Member, cfg.Capacity, MaxCapacity)
	}
	if cfg.HotThreshold == 0 {
		cfg.HotThreshold = DefaultHotThreshold
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	id, err := lookupIDs(cfg.Info)
	if err != nil {
		return nil, err
	}
	// FETCH sequence numbers start at the clock, so that they do not repeat
	// those of an earlier controller of the switch, whose FETCH_REPLYs may
	// still arrive.
	return &Controller{cfg: cfg, log: cfg.Logger.With("member", cfg.Member), dev: dev, id: id,
		slots: newSlotTable(cfg.Capacity), hot: map[string]uint16{}, nextSeq: uint64(time.Now().UnixNano()),
		installed: installed{addresses: map[netip.AddrPort]int{}, routes: map[int]netip.AddrPort{}}}, nil
}

// configure sets the hot-key threshold and asks for hot-key reports, one
// per list, sent at once; a switch taken over (resumed) may have them
// already.
func (c *Controller) configure(ctx context.Context, resumed bool) error {
	if err := c.dev.Write(ctx, p4entity.Update(p4v1.Update_MODIFY, p4entity.Register(c.id.hotThreshold, 0, p4entity.U16(c.cfg.HotThreshold)))); err != nil {
		return fmt.Errorf("cannot set the hot-key threshold of %s: %w", c.cfg.Member, err)
	}
	entry := &p4v1.Entity{Entity: &p4v1.Entity_DigestEntry{DigestEntry: &p4v1.DigestEntry{DigestId: c.id.hotKey}}}
	if resumed {
		es, err := c.dev.Read(ctx, entry)
		if err != nil {
			return fmt.Errorf("cannot read the hot-key reports of %s: %w", c.cfg.Member, err)
		}
		if len(es) > 0 {
			return nil
		}
	}
	entry.GetDigestEntry().Config = &p4v1.DigestEntry_Config{MaxListSize: 1}
	if err := c.dev.Write(ctx, p4entity.Update(p4v1.Update_INSERT, entry)); err != nil {
		return fmt.Errorf("cannot ask %s for hot-key reports: %w", c.cfg.Member, err)
	}
	return nil
}

// Stats returns the controller's counters.
func (c *Controller) Stats() *Stats { return &c.stats }

// Keys is how many keys the switch holds a slot for (filled or waiting
// for their fill).
func (c *Controller) Keys() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.slots.byKey)
}

// Renew applies p, a map read at readAt, to the switch and renews its
// serving lease from readAt when the member is Active in p.
func (c *Controller) Renew(ctx context.Context, p *partmap.Placement, readAt time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	clock, err := c.readClock(ctx)
	if err != nil {
		return err
	}
	// The switch's clock when the map was read was at least clock less the
	// time since: the lease counts from there.
	sinceRead := time.Since(readAt)
	if err := c.apply(ctx, p); err != nil {
		c.stats.Errors.Add(1)
		return err
	}
	until := uint64(0)
	if c.active {
		lease := c.cfg.Lease - sinceRead
		if lease > 0 {
			until = clock + uint64(lease/time.Microsecond)
		}
	}
	if until == 0 {
		c.stats.LeaseDenied.Add(1)
	} else {
		c.stats.Renewals.Add(1)
	}
	if err := c.dev.Write(ctx, p4entity.Update(p4v1.Update_MODIFY, p4entity.Register(c.id.leaseUntil, 0, p4entity.U64(until)))); err != nil {
		return fmt.Errorf("cannot renew the serving lease of %s: %w", c.cfg.Member, err)
	}
	return nil
}

func (c *Controller) readClock(ctx context.Context) (uint64, error) {
	es, err := c.dev.Read(ctx, p4entity.Register(c.id.clock, 0, nil))
	if err != nil || len(es) != 1 {
		return 0, fmt.Errorf("cannot read the clock of %s: %d cells, %w", c.cfg.Member, len(es), err)
	}
	return pipelines.BytesUint(es[0].GetRegisterEntry().GetData().GetBitstring()), nil
}

// apply installs p: identity, addresses and routes, and releases the
// slots of keys the member no longer holds — every slot when p is more
// than one version ahead of the last map applied to the switch: a version
// it never saw may have moved a key away and back while the shims stopped
// invalidating the switch for it (docs/dataplane.md, Fencing). A map
// older than the switch's is refused (ErrMapBehind).
func (c *Controller) apply(ctx context.Context, p *partmap.Placement) error {
	m := p.Map()
	if m.Version < c.applied {
		return fmt.Errorf("cannot apply map version %d to %s, which has version %d: %w", m.Version, c.cfg.Member, c.applied, ErrMapBehind)
	}
	l, i, ok := m.Member(c.cfg.Member)
	if !ok || !m.Layers[l].Switch {
		return fmt.Errorf("cannot apply map version %d: %s is no switch member of it", m.Version, c.cfg.Member)
	}
	mb := m.Layers[l].Members[i]
	base, err := netip.ParseAddrPort(mb.Address)
	if err != nil {
		return fmt.Errorf("cannot apply map version %d: member %s has address %q: %w", m.Version, mb.Name, mb.Address, err)
	}
	skipped := c.applied != 0 && m.Version > c.applied+1
	c.p, c.layer, c.member, c.addr, c.active = p, l, i, base, mb.State == partmap.Active
	if skipped && len(c.slots.byKey) > 0 {
		c.log.Info("map versions skipped: releasing every cached key", "applied", c.applied, "version", m.Version, "keys", len(c.slots.byKey))
		if err := c.releaseAll(ctx); err != nil {
			return err
		}
	} else if err := c.releaseNotHeld(ctx); err != nil {
		return err
	}
	c.applied = m.Version
	if err := c.writeIdentity(ctx, uint64(mb.ID), uint64(m.Version)); err != nil {
		return err
	}
	return c.writeAddresses(ctx, m, base)
}

func (c *Controller) writeIdentity(ctx context.Context, node, version uint64) error {
	if c.installed.written && c.installed.identity == [2]uint64{node, version} {
		return nil
	}
	e := p4entity.TableEntry(c.id.identity, c.id.setIdentity, nil, p4entity.U32(uint32(node)), p4entity.U64(version))
	e.GetTableEntry().IsDefaultAction = true
	if err := c.dev.Write(ctx, p4entity.Update(p4v1.Update_MODIFY, e)); err != nil {
		return fmt.Errorf("cannot set the identity of %s: %w", c.cfg.Member, err)
	}
	c.installed.identity, c.installed.written = [2]uint64{node, version}, true
	return nil
}

// writeAddresses installs the coherence and read ports and the shims'
// routes of m, and removes those m no longer has.
func (c *Controller) writeAddresses(ctx context.Context, m *partmap.Map, base netip.AddrPort) error {
	want := map[netip.AddrPort]int{base: -1}
	routes := map[int]netip.AddrPort{}
	g := 0
	for _, r := range m.Storage.Racks {
		for _, sh := range r.Shards {
			want[netip.AddrPortFrom(base.Addr(), partmap.SwitchReadPort(base.Port(), g))] = g
			if a, err := peers.ResolveAddr(sh.Address); err == nil && a.Addr().Is4() {
				routes[g] = a
			}
			g++
		}
	}
	var ups []*p4v1.Update
	for a, shard := range c.installed.addresses {
		if w, ok := want[a]; !ok || w != shard {
			ups = append(ups, p4entity.Update(p4v1.Update_DELETE, c.addressEntry(a, -2)))
			delete(c.installed.addresses, a)
		}
	}
	for a, shard := range want {
		if _, ok := c.installed.addresses[a]; !ok {
			ups = append(ups, p4entity.Update(p4v1.Update_INSERT, c.addressEntry(a, shard)))
		}
	}
	for shard, a := range c.installed.routes {
		if w, ok := routes[shard]; !ok || w != a {
			ups = append(ups, p4entity.Update(p4v1.Update_DELETE, p4entity.TableEntry(c.id.storageRoute, 0, [][]byte{p4entity.U32(uint32(shard))})))
			delete(c.installed.routes, shard)
		}
	}
	for shard, a := range routes {
		if _, ok := c.installed.routes[shard]; !ok {
			a4 := a.Addr().As4()
			ups = append(ups, p4entity.Update(p4v1.Update_INSERT, p4entity.TableEntry(c.id.storageRoute, c.id.toShim, [][]byte{p4entity.U32(uint32(shard))}, a4[:], p4entity.U16(a.Port()))))
		}
	}
	if err := c.dev.Write(ctx, ups...); err != nil {
		return fmt.Errorf("cannot install the addresses of %s: %w", c.cfg.Member, err)
	}
	for a, shard := range want {
		c.installed.addresses[a] = shard
	}
	for shard, a := range routes {
		c.installed.routes[shard] = a
	}
	return nil
}

// addressEntry is the switch_address entry of a: the coherence port
// (shard -1), a read port (shard ≥ 0), or the match alone (shard -2).
func (c *Controller) addressEntry(a netip.AddrPort, shard int) *p4v1.Entity {
	a4 := a.Addr().As4()
	match := [][]byte{a4[:], p4entity.U16(a.Port())}
	switch {
	case shard == -1:
		return p4entity.TableEntry(c.id.switchAddress, c.id.serveCoherence, match)
	case shard >= 0:
		return p4entity.TableEntry(c.id.switchAddress, c.id.serveReads, match, p4entity.U32(uint32(shard)))
	default:
		return p4entity.TableEntry(c.id.switchAddress, 0, match)
	}
}
