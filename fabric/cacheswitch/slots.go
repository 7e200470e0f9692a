package cacheswitch

import (
	"context"
	"errors"
	"fmt"
	"sort"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/placement/hashing"
	pipelines "github.com/distcache/distcache/stratum_pipelines"
	"github.com/distcache/distcache/stratum_pipelines/p4entity"
)

// slot is a cached key: its lookup entry and the FETCH its fill waits for.
type slot struct {
	index    uint32
	key      string
	fetchSeq uint64 // the FETCH the slot waits for (fill_seq); 0 when filled
	// hitsRead is cache_hits of the slot when last read; recentHits the
	// hits since the read before, which eviction compares.
	hitsRead, recentHits uint64
}

// slotTable holds the switch's slots by key and the free ones.
type slotTable struct {
	byKey map[string]*slot
	free  []uint32
}

func newSlotTable(capacity int) slotTable {
	t := slotTable{byKey: map[string]*slot{}}
	for i := capacity - 1; i >= 0; i-- {
		t.free = append(t.free, uint32(i))
	}
	return t
}

// releaseNotHeld removes the slots of keys the member does not hold under
// the current map (every slot when it is not Active).
func (c *Controller) releaseNotHeld(ctx context.Context) error {
	var gone []*slot
	for key, s := range c.slots.byKey {
		if !c.active || !c.p.Holds(c.layer, c.member, key) {
			gone = append(gone, s)
		}
	}
	return c.release(ctx, gone)
}

// releaseAll removes every slot.
func (c *Controller) releaseAll(ctx context.Context) error {
	gone := make([]*slot, 0, len(c.slots.byKey))
	for _, s := range c.slots.byKey {
		gone = append(gone, s)
	}
	return c.release(ctx, gone)
}

// release deletes the slots' lookup entries and clears their valid bits.
func (c *Controller) release(ctx context.Context, gone []*slot) error {
	if len(gone) == 0 {
		return nil
	}
	var ups []*p4v1.Update
	for _, s := range gone {
		ups = append(ups, p4entity.Update(p4v1.Update_DELETE, c.lookupMatch(s.key)))
	}
	if err := c.dev.Write(ctx, ups...); err != nil {
		return fmt.Errorf("cannot remove %d keys from %s: %w", len(gone), c.cfg.Member, err)
	}
	ups = ups[:0]
	for _, s := range gone {
		ups = append(ups, p4entity.Update(p4v1.Update_MODIFY, p4entity.Register(c.id.valid, int64(s.index), p4entity.U16(0))))
		delete(c.slots.byKey, s.key)
		c.slots.free = append(c.slots.free, s.index)
	}
	c.stats.Evicted.Add(uint64(len(gone)))
	return c.dev.Write(ctx, ups...)
}

// lookupEntry is key's cache_lookup entry for slot index. The key rides
// in the entry's metadata, which P4Runtime keeps for the controller and
// returns with the entry: a controller that takes the switch over reads
// the keys back from there (resume.go).
func (c *Controller) lookupEntry(key string, index uint32) *p4v1.Entity {
	d := hashing.DigestOfString(key)
	e := p4entity.TableEntry(c.id.cacheLookup, c.id.cached, [][]byte{d[:]}, p4entity.U32(index))
	e.GetTableEntry().Metadata = []byte(key)
	return e
}

// lookupMatch is key's cache_lookup match, for a delete.
func (c *Controller) lookupMatch(key string) *p4v1.Entity {
	d := hashing.DigestOfString(key)
	return p4entity.TableEntry(c.id.cacheLookup, 0, [][]byte{d[:]})
}

// Insert gives the hottest keys reported since the last call that the
// member holds a slot each, evicting the slots with the fewest hits when
// they are hotter, fetches them, and fetches again the slots whose fill
// has not arrived or was refused. It then resets the switch's sketch.
func (c *Controller) Insert(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	hot := c.hot
	c.hot = map[string]uint16{}
	if c.p == nil || !c.active {
		return nil
	}
	type cand struct {
		key   string
		count uint16
	}
	var cands []cand
	for k, n := range hot {
		if _, cached := c.slots.byKey[k]; !cached && len(k) <= wire.MaxSwitchKeyLen && c.p.Holds(c.layer, c.member, k) {
			cands = append(cands, cand{k, n})
		}
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].count > cands[j].count })
	victims, err := c.victims(ctx, len(cands)-len(c.slots.free))
	if err != nil {
		return err
	}
	// Choose first, then program in a few batched writes: a write per key
	// would hold the lock (and the lease renewals) for as many round trips.
	var evict []*slot
	var keys []string
	free := len(c.slots.free)
	for _, cd := range cands {
		if free == 0 {
			if len(victims) == 0 || victims[0].recentHits >= uint64(cd.count) {
				break
			}
			evict, victims = append(evict, victims[0]), victims[1:]
			free++
		}
		keys = append(keys, cd.key)
		free--
	}
	if err := c.release(ctx, evict); err != nil {
		return err
	}
	if err := c.insert(ctx, keys); err != nil {
		return err
	}
	if err := c.refetch(ctx); err != nil {
		return err
	}
	return c.resetSketch(ctx)
}

// victims are up to n filled slots by their hits since the last read
// (about an interval's: comparable with a candidate's count), fewest
// first.
func (c *Controller) victims(ctx context.Context, n int) ([]*slot, error) {
	if n <= 0 || len(c.slots.byKey) == 0 {
		return nil, nil
	}
	var filters []*p4v1.Entity
	var ss []*slot
	for _, s := range c.slots.byKey {
		if s.fetchSeq == 0 {
			filters = append(filters, p4entity.CounterCell(c.id.cacheHits, int64(s.index)))
			ss = append(ss, s)
		}
	}
	es, err := c.dev.Read(ctx, filters...)
	if err != nil {
		return nil, fmt.Errorf("cannot read the hits of %s: %w", c.cfg.Member, err)
	}
	total := map[uint32]uint64{}
	for _, e := range es {
		ce := e.GetCounterEntry()
		total[uint32(ce.GetIndex().GetIndex())] = uint64(ce.GetData().GetPacketCount())
	}
	for _, s := range ss {
		s.recentHits, s.hitsRead = total[s.index]-s.hitsRead, total[s.index]
	}
	sort.Slice(ss, func(i, j int) bool { return ss[i].recentHits < ss[j].recentHits })
	return ss[:min(n, len(ss))], nil
}

// insert gives each key a free slot: the registers of new, invalid
// slots waiting for a FETCH, then their lookup entries, then the FETCHes.
// A key whose entry the switch refused gets its slot back.
func (c *Controller) insert(ctx context.Context, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	slots := make([]*slot, len(keys))
	var regs, entries []*p4v1.Update
	for i, key := range keys {
		s := &slot{index: c.slots.free[len(c.slots.free)-1-i], key: key, fetchSeq: c.seq()}
		slots[i] = s
		regs = append(regs,
			p4entity.Update(p4v1.Update_MODIFY, p4entity.Register(c.id.valid, int64(s.index), p4entity.U16(0))),
			p4entity.Update(p4v1.Update_MODIFY, p4entity.Register(c.id.version, int64(s.index), p4entity.U64(0))),
			p4entity.Update(p4v1.Update_MODIFY, p4entity.Register(c.id.fillSeq, int64(s.index), p4entity.U64(s.fetchSeq))))
		entries = append(entries, p4entity.Update(p4v1.Update_INSERT, c.lookupEntry(key, s.index)))
	}
	if err := c.dev.Write(ctx, regs...); err != nil {
		return fmt.Errorf("cannot prepare %d slots of %s: %w", len(keys), c.cfg.Member, err)
	}
	c.slots.free = c.slots.free[:len(c.slots.free)-len(keys)]
	failed := map[int]bool{}
	if err := c.dev.Write(ctx, entries...); err != nil {
		var we updateErrors
		if !errors.As(err, &we) {
			return fmt.Errorf("cannot insert %d keys into %s: %w", len(keys), c.cfg.Member, err)
		}
		for i, e := range we.UpdateErrors() {
			if e != nil {
				failed[i] = true
				c.log.Warn("cannot insert a key", "key", keys[i], "err", e)
			}
		}
	}
	for i, s := range slots {
		if failed[i] {
			c.slots.free = append(c.slots.free, s.index)
			continue
		}
		c.slots.byKey[s.key] = s
		c.stats.Inserted.Add(1)
		if err := c.fetch(s); err != nil {
			return err
		}
	}
	return nil
}

// updateErrors is a Device's Write error that says which updates failed
// (stratum.WriteError).
type updateErrors interface{ UpdateErrors() []error }

// refetch sends a new FETCH for every slot still waiting for its fill.
func (c *Controller) refetch(ctx context.Context) error {
	var waiting []*slot
	var ups []*p4v1.Update
	for _, s := range c.slots.byKey {
		if s.fetchSeq != 0 {
			s.fetchSeq = c.seq()
			waiting = append(waiting, s)
			ups = append(ups, p4entity.Update(p4v1.Update_MODIFY, p4entity.Register(c.id.fillSeq, int64(s.index), p4entity.U64(s.fetchSeq))))
		}
	}
	if err := c.dev.Write(ctx, ups...); err != nil {
		return fmt.Errorf("cannot fetch %d keys again into %s: %w", len(waiting), c.cfg.Member, err)
	}
	for _, s := range waiting {
		if err := c.fetch(s); err != nil {
			return err
		}
	}
	return nil
}

func (c *Controller) seq() uint64 {
	c.nextSeq++
	return c.nextSeq
}

// fetch sends slot s's FETCH from the switch's coherence port to the
// key's shim — the route the switch has for the key's shard, installed
// from the map (writeAddresses) — through the switch's CPU port.
func (c *Controller) fetch(s *slot) error {
	dst, ok := c.installed.routes[c.p.ShardIndex(s.key)]
	if !ok {
		return fmt.Errorf("cannot fetch %q: the switch has no route to its shard's shim", s.key)
	}
	b, err := wire.Encode(&wire.Message{Header: wire.Header{Op: wire.OpFetch, Seq: s.fetchSeq, MapVersion: uint64(c.p.Map().Version)}, Key: []byte(s.key)}, wire.DefaultDatagram)
	if err != nil {
		return fmt.Errorf("cannot fetch %q: %w", s.key, err)
	}
	c.stats.Fetches.Add(1)
	return c.dev.PacketOut(pipelines.AppendFrame(nil, c.addr, dst, b))
}

// resetSketch zeroes the Count-Min rows and the Bloom filter for the next
// interval.
func (c *Controller) resetSketch(ctx context.Context) error {
	var ups []*p4v1.Update
	for _, id := range []uint32{c.id.sketch0, c.id.sketch1, c.id.sketch2, c.id.sketch3} {
		ups = append(ups, p4entity.Update(p4v1.Update_MODIFY, p4entity.Register(id, -1, p4entity.U16(0))))
	}
	for _, id := range []uint32{c.id.bloom0, c.id.bloom1, c.id.bloom2} {
		ups = append(ups, p4entity.Update(p4v1.Update_MODIFY, p4entity.Register(id, -1, []byte{0})))
	}
	return c.dev.Write(ctx, ups...)
}
