package shim

import (
	"sync/atomic"
	"time"

	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/transport"
)

// Stats counts a shim's work.
type Stats struct {
	Gets              uint64 // GET requests served (found or not)
	GetMisses         uint64 // GETs of keys Redis does not hold (StatusNotFound)
	Puts              uint64 // PUT requests executed (retransmits excluded)
	Dels              uint64 // DEL requests executed (retransmits excluded)
	RMWs              uint64 // RMW requests executed (retransmits excluded)
	Fetches           uint64 // FETCH requests from owners served
	Uncacheable       uint64 // FETCHes refused with StatusUncacheable: the key has an expiry
	NotOwner          uint64 // requests refused with StatusNotOwner
	Overloaded        uint64 // requests refused with StatusOverloaded
	RedisErrors       uint64 // Redis commands that failed
	Invalidations     uint64 // INVALIDATE calls sent (one per owner and write)
	Skipped           uint64 // owners a write did not invalidate: the directory lists no entry of the key there (holders.go)
	Flushes           uint64 // FLUSHes nodes acknowledged (holders.go)
	HolderKeys        int    // keys in the directory of copies now
	CopiesInvalidated uint64 // acknowledged INVALIDATEs that reported a cached copy (FlagHit), of writes that passed phase 1
	CoherenceFailures uint64 // writes refused because phase 1 was not acknowledged
	Released          uint64 // phase 1 calls no longer waited for: the owner's lease ran out after it was removed or fenced
	UpdatesSent       uint64 // UPDATE calls sent (one per owner and PUT)
	UpdateFailures    uint64 // UPDATE calls not acknowledged in time
	DuplicateRequests uint64 // retransmitted requests not served again (reads in progress, writes)
	AlreadyApplied    uint64 // retransmitted writes a previous run of the shim had applied (Redis marks, applyScript): acknowledged, not applied again
	Shed              uint64 // reads shed with StatusOverloaded: the emulated capacity was QueueTimeout away
	CoalescedGets     uint64 // GETs answered by the Redis read of another GET of the key, which they joined while it waited for its work unit
	ReadBatches       uint64 // receive batches of several GETs served together (serveReadBatch)
	BatchedReads      uint64 // GETs served in such a batch
	WriteBatches      uint64 // receive batches whose writes were served together (serveWriteBatch)
	BatchedWrites     uint64 // writes served in such a batch
	LeaseGrants       uint64 // RENEWs answered with a grant (leases.go)
	LeaseReleases     uint64 // owners released by lease: every lease granted them had ended (leases.go)
	Work              uint64 // work units taken from the emulated capacity (requests, and copies of writes)
	MapVersion        int64  // version of the current partition map (0: none)
	Transport         transport.Stats
}

// counters are the atomic counters behind Stats.
type counters struct {
	gets, getMisses, puts, dels, fetches, rmws    atomic.Uint64
	uncacheable                                   atomic.Uint64
	notOwner, overloaded, redisErrors             atomic.Uint64
	invalidations, coherenceFailures, copies      atomic.Uint64
	invalidationsReleased, invalidationsSkipped   atomic.Uint64
	flushes                                       atomic.Uint64
	updatesSent, updateFailures, duplicates, shed atomic.Uint64
	alreadyApplied, coalescedGets                 atomic.Uint64
	readBatches, batchedReads                     atomic.Uint64
	writeBatches, batchedWrites                   atomic.Uint64
	grants, leaseReleases                         atomic.Uint64
}

// Work is the work the shim has done against its emulated capacity, as GET
// /work answers it: distcache_work_units_total, distcache_work_capacity,
// and the INVALIDATE and UPDATE calls it sent.
func (s *Shim) Work() metrics.Work {
	c := &s.stats
	return metrics.Work{Units: s.work.Used(), Capacity: s.work.Rate(), Coherence: c.invalidations.Load() + c.updatesSent.Load()}
}

// Stats returns the counters.
func (s *Shim) Stats() Stats {
	c := &s.stats
	st := Stats{
		Gets: c.gets.Load(), GetMisses: c.getMisses.Load(),
		Puts: c.puts.Load(), Dels: c.dels.Load(), RMWs: c.rmws.Load(), Fetches: c.fetches.Load(), Uncacheable: c.uncacheable.Load(),
		NotOwner: c.notOwner.Load(), Overloaded: c.overloaded.Load(),
		RedisErrors:   c.redisErrors.Load(),
		Invalidations: c.invalidations.Load(), CoherenceFailures: c.coherenceFailures.Load(),
		CopiesInvalidated: c.copies.Load(), Released: c.invalidationsReleased.Load(),
		Skipped: c.invalidationsSkipped.Load(), Flushes: c.flushes.Load(), HolderKeys: s.holders.size(),
		UpdatesSent: c.updatesSent.Load(), UpdateFailures: c.updateFailures.Load(),
		DuplicateRequests: c.duplicates.Load(), AlreadyApplied: c.alreadyApplied.Load(), Shed: c.shed.Load(),
		CoalescedGets: c.coalescedGets.Load(), ReadBatches: c.readBatches.Load(), BatchedReads: c.batchedReads.Load(),
		WriteBatches: c.writeBatches.Load(), BatchedWrites: c.batchedWrites.Load(),
		LeaseGrants: c.grants.Load(), LeaseReleases: c.leaseReleases.Load(),
		Work:      s.work.Used(),
		Transport: s.ep.Stats(),
	}
	if v := s.view.Load(); v != nil {
		st.MapVersion = v.cur.version
	}
	return st
}

// HotKeys is the reads and writes of the keys the shim was asked for most
// in its last complete interval (Config.HotKeysInterval), most first, as
// GET /hotkeys answers them. Reads are the GETs it received: a cache node's
// misses (concurrent ones for a key coalesced there into one) and the
// direct reads of clients; writes are PUTs, DELs and read-modify-writes.
func (s *Shim) HotKeys() metrics.HotKeys {
	last := s.top.Last()
	h := metrics.HotKeys{Interval: last.Interval.Seconds(), Keys: make([]metrics.KeyCount, 0, len(last.Keys))}
	for _, k := range last.Keys {
		h.Keys = append(h.Keys, metrics.KeyCount{Key: []byte(k.Key), Reads: k.Reads, Writes: k.Writes})
	}
	return h
}

// rotateHotKeys ends a hot-key interval every Config.HotKeysInterval
// until Close.
func (s *Shim) rotateHotKeys() {
	t := time.NewTicker(s.cfg.HotKeysInterval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case now := <-t.C:
			s.top.Rotate(now)
		}
	}
}
