package cacheswitch

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/placement/hashing"
	pipelines "github.com/distcache/distcache/stratum_pipelines"
	"github.com/distcache/distcache/stratum_pipelines/p4entity"
)

// Resume returns a controller of the switch behind dev that already runs
// the program's pipeline, programmed by another controller (or an earlier
// run of this one): it takes the switch over without emptying it. It
// reads back what the switch holds — the identity and the map version
// last applied, the addresses and routes installed, and the cached keys
// with their slots, valid bits, pending fills and hits — and leaves the
// serving lease to the next Renew.
//
// The slots stay coherent across the takeover: the shims invalidate the
// switch for every key it owns in their maps, whoever controls it, and
// release it only by a map version in which it does not own the key. The
// next Renew applies the map it reads against the version the switch
// applied last, as one controller does from read to read: it releases
// the keys the member no longer holds, and every key when a version was
// skipped. A switch whose map version is unknown (never applied), whose
// entry has no key in its metadata, or whose key does not match its
// digest, has those slots released here.
func Resume(ctx context.Context, dev Device, cfg Config) (*Controller, error) {
	c, err := newController(dev, cfg)
	if err != nil {
		return nil, err
	}
	if err := c.readIdentity(ctx); err != nil {
		return nil, err
	}
	if err := c.readAddresses(ctx); err != nil {
		return nil, err
	}
	stale, err := c.readSlots(ctx)
	if err != nil {
		return nil, err
	}
	if c.applied == 0 && len(c.slots.byKey) > 0 {
		c.log.Info("the switch has cached keys but no map version: releasing them", "keys", len(c.slots.byKey))
		if err := c.releaseAll(ctx); err != nil {
			return nil, err
		}
	}
	if err := c.removeStale(ctx, stale); err != nil {
		return nil, err
	}
	if err := c.configure(ctx, true); err != nil {
		return nil, err
	}
	c.log.Info("switch taken over", "keys", len(c.slots.byKey), "map_version", c.applied)
	return c, nil
}

// readIdentity reads the identity table's default action: the member's
// node id and the map version last applied.
func (c *Controller) readIdentity(ctx context.Context) error {
	filter := p4entity.TableEntry(c.id.identity, 0, nil)
	filter.GetTableEntry().IsDefaultAction = true
	es, err := c.dev.Read(ctx, filter)
	if err != nil {
		return fmt.Errorf("cannot read the identity of %s: %w", c.cfg.Member, err)
	}
	for _, e := range es {
		a := e.GetTableEntry().GetAction().GetAction()
		if a.GetActionId() != c.id.setIdentity || len(a.GetParams()) != 2 {
			continue
		}
		node, version := param(a, 1), param(a, 2)
		c.installed.identity, c.installed.written, c.applied = [2]uint64{node, version}, true, int64(version)
	}
	return nil
}

// readAddresses reads the switch_address and storage_route entries.
func (c *Controller) readAddresses(ctx context.Context) error {
	es, err := c.dev.Read(ctx, p4entity.TableEntry(c.id.switchAddress, 0, nil), p4entity.TableEntry(c.id.storageRoute, 0, nil))
	if err != nil {
		return fmt.Errorf("cannot read the addresses of %s: %w", c.cfg.Member, err)
	}
	for _, e := range es {
		te := e.GetTableEntry()
		a := te.GetAction().GetAction()
		switch {
		case te.GetTableId() == c.id.switchAddress && len(te.GetMatch()) == 2:
			ap := netip.AddrPortFrom(addr4(match(te, 1)), uint16(match(te, 2)))
			switch a.GetActionId() {
			case c.id.serveCoherence:
				c.installed.addresses[ap] = -1
			case c.id.serveReads:
				c.installed.addresses[ap] = int(param(a, 1))
			}
		case te.GetTableId() == c.id.storageRoute && len(te.GetMatch()) == 1 && a.GetActionId() == c.id.toShim:
			c.installed.routes[int(match(te, 1))] = netip.AddrPortFrom(addr4(param(a, 1)), uint16(param(a, 2)))
		}
	}
	return nil
}

// readSlots reads the cache_lookup entries and, for those whose key can
// be kept, the slot's valid bit, pending FETCH and hits. It returns the
// entries it cannot keep: no key in the metadata, a key that is not the
// entry's digest or too long for a switch, a slot outside this
// controller's capacity or another key's.
func (c *Controller) readSlots(ctx context.Context) ([]*p4v1.TableEntry, error) {
	es, err := c.dev.Read(ctx, p4entity.TableEntry(c.id.cacheLookup, 0, nil))
	if err != nil {
		return nil, fmt.Errorf("cannot read the cached keys of %s: %w", c.cfg.Member, err)
	}
	var stale []*p4v1.TableEntry
	used := map[uint32]bool{}
	var kept []*slot
	for _, e := range es {
		te := e.GetTableEntry()
		key, a := string(te.GetMetadata()), te.GetAction().GetAction()
		d := hashing.DigestOfString(key)
		index := uint32(param(a, 1))
		if key == "" || len(key) > wire.MaxSwitchKeyLen || len(te.GetMatch()) != 1 || a.GetActionId() != c.id.cached ||
			!bytes.Equal(pipelines.StripZeros(d[:]), pipelines.StripZeros(te.GetMatch()[0].GetExact().GetValue())) ||
			int(index) >= c.cfg.Capacity || used[index] {
			stale = append(stale, te)
			continue
		}
		used[index] = true
		kept = append(kept, &slot{index: index, key: key})
	}
	if len(kept) > 0 {
		if err := c.readSlotState(ctx, kept); err != nil {
			return nil, err
		}
	}
	for _, s := range kept {
		c.slots.byKey[s.key] = s
	}
	c.slots.free = c.slots.free[:0]
	for i := c.cfg.Capacity - 1; i >= 0; i-- {
		if !used[uint32(i)] {
			c.slots.free = append(c.slots.free, uint32(i))
		}
	}
	return stale, nil
}

// readSlotState reads each slot's valid bit, fill_seq and hits: a valid
// slot is filled, an invalid one waits for the FETCH of its fill_seq (the
// next Insert fetches it again under a sequence number of this
// controller's).
func (c *Controller) readSlotState(ctx context.Context, slots []*slot) error {
	filters := make([]*p4v1.Entity, 0, 3*len(slots))
	for _, s := range slots {
		filters = append(filters, p4entity.Register(c.id.valid, int64(s.index), nil), p4entity.Register(c.id.fillSeq, int64(s.index), nil),
			p4entity.CounterCell(c.id.cacheHits, int64(s.index)))
	}
	es, err := c.dev.Read(ctx, filters...)
	if err != nil {
		return fmt.Errorf("cannot read the slots of %s: %w", c.cfg.Member, err)
	}
	valid, fillSeq, hits := map[uint32]uint64{}, map[uint32]uint64{}, map[uint32]uint64{}
	for _, e := range es {
		if re := e.GetRegisterEntry(); re != nil {
			v := pipelines.BytesUint(re.GetData().GetBitstring())
			switch re.GetRegisterId() {
			case c.id.valid:
				valid[uint32(re.GetIndex().GetIndex())] = v
			case c.id.fillSeq:
				fillSeq[uint32(re.GetIndex().GetIndex())] = v
			}
		}
		if ce := e.GetCounterEntry(); ce != nil {
			hits[uint32(ce.GetIndex().GetIndex())] = uint64(ce.GetData().GetPacketCount())
		}
	}
	for _, s := range slots {
		s.hitsRead = hits[s.index]
		if valid[s.index] == 1 {
			continue
		}
		if s.fetchSeq = fillSeq[s.index]; s.fetchSeq == 0 {
			s.fetchSeq = c.seq()
		}
	}
	return nil
}

// removeStale deletes the lookup entries readSlots could not keep and
// clears the valid bits of their slots, unless a kept key uses the slot.
func (c *Controller) removeStale(ctx context.Context, stale []*p4v1.TableEntry) error {
	if len(stale) == 0 {
		return nil
	}
	c.log.Info("removing cached keys the switch cannot tell", "entries", len(stale))
	kept := map[uint32]bool{}
	for _, s := range c.slots.byKey {
		kept[s.index] = true
	}
	var dels, clears []*p4v1.Update
	for _, te := range stale {
		dels = append(dels, p4entity.Update(p4v1.Update_DELETE, &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: te.TableId, Match: te.Match}}}))
		if index := param(te.GetAction().GetAction(), 1); index < MaxCapacity && !kept[uint32(index)] {
			clears = append(clears, p4entity.Update(p4v1.Update_MODIFY, p4entity.Register(c.id.valid, int64(index), p4entity.U16(0))))
		}
	}
	if err := c.dev.Write(ctx, dels...); err != nil {
		return fmt.Errorf("cannot remove %d unknown keys from %s: %w", len(stale), c.cfg.Member, err)
	}
	c.stats.Evicted.Add(uint64(len(stale)))
	return c.dev.Write(ctx, clears...)
}

// param is parameter id of a as a number (0 when missing).
func param(a *p4v1.Action, id uint32) uint64 {
	for _, p := range a.GetParams() {
		if p.GetParamId() == id {
			return pipelines.BytesUint(p.GetValue())
		}
	}
	return 0
}

// match is the exact value of field id of te as a number.
func match(te *p4v1.TableEntry, id uint32) uint64 {
	for _, m := range te.GetMatch() {
		if m.GetFieldId() == id {
			return pipelines.BytesUint(m.GetExact().GetValue())
		}
	}
	return 0
}

func addr4(v uint64) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}
