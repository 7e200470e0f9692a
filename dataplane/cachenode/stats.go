package cachenode

import (
	"sync/atomic"
	"time"

	"github.com/distcache/distcache/dataplane/transport"
)

// Stats are a node's counters and gauges. Counters only increase.
type Stats struct {
	Gets           uint64 // GET requests
	Hits           uint64 // GETs served from a valid copy
	Misses         uint64 // GETs forwarded (joined or started a flight)
	Coalesced      uint64 // misses that joined a pending flight
	Duplicates     uint64 // retransmitted GETs already waiting on a flight or parked
	Parked         uint64 // misses parked on a pending write, answered by its phase 2
	ParkForwarded  uint64 // parked misses sent to the shim after all (phase 2 late, lost or failed)
	ParkSkipped    uint64 // misses during a pending write that a reader had waited for in vain: not parked
	NotFound       uint64 // GETs answered not found by the shim
	BackendErrors  uint64 // backend calls (GET or FETCH) that got no reply
	BackendBatches uint64 // backend reads of several flights for one shim sent together (forwardMany)
	BackendBatched uint64 // flights read in those
	Invalidations  uint64 // INVALIDATE requests
	Updates        uint64 // UPDATEs applied
	UpdatesIgnored uint64 // UPDATEs not applied (no entry, other version, too big)
	Fills          uint64 // FETCH replies applied
	NegativeFills  uint64 // FETCH replies of keys not in storage: negative entries (counted in Fills when applied)
	FillsIgnored   uint64 // FETCH replies not applied (stale)
	FillsFailed    uint64 // FETCHes that failed: entry removed
	FillsRefused   uint64 // fills over CapacityBytes (also in FillsFailed)
	Inserts        uint64 // placeholders added by the insertion loop
	Evictions      uint64 // entries evicted (plan or update over CapacityBytes)
	Dropped        uint64 // entries dropped by map changes
	NotOwner       uint64 // requests of another role (PUT, DEL, FETCH)
	Refused        uint64 // GETs refused with not_owner: the node is not Active in its map
	Unleased       uint64 // GETs of a valid copy served as misses: the serving lease had run out
	Untracked      uint64 // coalesced readers read again: the shim no longer invalidated this node for the key
	CacheOnlyMiss  uint64 // hedged GETs (wire.FlagCacheOnly) refused: no valid copy, backend not read
	DirectMisses   uint64 // misses of readers that read storage themselves (wire.FlagDirect), also in Misses
	Flushes        uint64 // FLUSHes served: a shim's shard dropped (flush.go)
	Renewals       uint64 // serving lease renewals
	LeaseStarts    uint64 // renewals that started a new lease (the previous one had run out)
	Leased         bool   // the serving leases are valid now (leasedNow)
	ShimGrants     uint64 // leases granted by the storage shims (Config.ShimLeases)
	ShimFlushes    uint64 // a shim's entries dropped for a grant of a new epoch (or its first)
	ShimFailures   uint64 // renewals of a shim's lease unanswered or refused
	ShimBehind     uint64 // grants not applied: the shim's map was newer than the node's
	StaleEpochs    uint64 // UPDATEs and fills not applied: sent in an epoch the node does not hold
	Work           uint64 // work units taken from the emulated capacity (hits, coherence of held keys)
	Items          int64  // entries now, placeholders included
	Bytes          int64  // value bytes now
	Load           uint32 // the load stamped into replies now
	Transport      transport.Stats
}

// counters are the atomic counters behind Stats.
type counters struct {
	gets, hits, misses, coalesced, duplicates, notFound, backendErrors atomic.Uint64
	invalidations, updates, updatesIgnored                             atomic.Uint64
	fills, fillsIgnored, fillsFailed, fillsRefused, inserts, evictions atomic.Uint64
	dropped, notOwner, parked, parkForwarded, parkSkipped              atomic.Uint64
	backendBatches, backendBatched, negativeFills                      atomic.Uint64
	refused, unleased, untracked, cacheOnlyRefused, directMisses       atomic.Uint64
	flushes                                                            atomic.Uint64
}

// Stats returns a snapshot of the counters. They are read one at a time, so
// a snapshot taken under traffic may mix slightly different instants.
func (n *Node) Stats() Stats {
	c := &n.stats
	return Stats{
		Gets: c.gets.Load(), Hits: c.hits.Load(), Misses: c.misses.Load(),
		Coalesced: c.coalesced.Load(), Duplicates: c.duplicates.Load(),
		Parked: c.parked.Load(), ParkForwarded: c.parkForwarded.Load(), ParkSkipped: c.parkSkipped.Load(),
		NotFound: c.notFound.Load(), BackendErrors: c.backendErrors.Load(),
		BackendBatches: c.backendBatches.Load(), BackendBatched: c.backendBatched.Load(),
		Invalidations: c.invalidations.Load(), Updates: c.updates.Load(),
		UpdatesIgnored: c.updatesIgnored.Load(), Fills: c.fills.Load(), NegativeFills: c.negativeFills.Load(),
		FillsIgnored: c.fillsIgnored.Load(), FillsFailed: c.fillsFailed.Load(),
		FillsRefused: c.fillsRefused.Load(), Inserts: c.inserts.Load(), Evictions: c.evictions.Load(),
		Dropped: c.dropped.Load(), NotOwner: c.notOwner.Load(), Work: n.work.Used(),
		Refused: c.refused.Load(), Unleased: c.unleased.Load(), Untracked: c.untracked.Load(),
		CacheOnlyMiss: c.cacheOnlyRefused.Load(), DirectMisses: c.directMisses.Load(), Flushes: c.flushes.Load(),
		Renewals: n.lease.renewals.Load(), LeaseStarts: n.lease.expiries.Load(),
		Leased:     n.leasedNow(),
		ShimGrants: n.shims.grants.Load(), ShimFlushes: n.shims.flushes.Load(),
		ShimFailures: n.shims.failures.Load(), ShimBehind: n.shims.behind.Load(), StaleEpochs: n.shims.staleEpochs.Load(),
		Items: n.store.items.Load(), Bytes: n.store.bytes.Load(),
		Load:      n.loadAt(n.now(time.Now())),
		Transport: n.ep.Stats(),
	}
}
