// Package cachenode is the DistCache cache node: the software counterpart of
// a cache switch (DistCache, Liu et al., FAST '19, §4; DESIGN.md part 4). A
// node is one member of one cache layer of the partition map. It caches the
// hot keys of its partition, answers reads of them, forwards the other reads
// to the storage shims, and takes part in the shims' two-phase coherence.
//
// # Reads (§4.2)
//
// Every GET counts in a load meter (routing.LoadMeter, time constant
// Config.LoadWindow), added in tallies of up to 32 GETs or a millisecond
// (load.go). Every reply carries FlagTelemetry with the node's member id
// and its load: the meter's exponentially decayed rate expressed in
// queries per LoadWindow, rounded, plus the GETs tallied since (so an idle
// node that received one query reports 1), which is what clients feed
// their routing.LoadTable with to choose among a key's candidate nodes.
//
// A GET of a key with a valid copy is a hit: the node answers GET_REPLY with
// FlagHit, the value and its version. The hit path does not allocate: the
// cache is looked up with the key bytes (m[string(b)] does not copy), the
// request message is rewritten in place into the reply, stored values are
// immutable slices (an update replaces the slice), and the endpoint encodes
// into pooled buffers.
//
// Any other GET is a miss and is forwarded to the key's storage shim. Misses
// are coalesced as in CableCache: while a backend request for a key is in
// flight, later misses of the key join it as waiters instead of sending
// their own, and the one reply is relayed to every waiter with its own
// sequence number. A flight never spans a write: INVALIDATE seals the key's
// current flight (removes it from the flight table), so readers that arrived
// before the write's invalidation keep the older read — they were
// concurrent with the write — and no later reader joins it.
//
// The flights a receive batch starts leave together when the batch ends
// (forward.go): those bound for one shim as one transport CallManyFunc,
// their requests in one sendmmsg and their replies relayed by the reader
// that receives the last of them, with no goroutine waiting, instead of a
// goroutine, a system call and a wake-up each. Which flights
// exist, who joins them and what seals them is decided per miss as before;
// only the sending is shared.
//
// Readers that arrive while a write of the key is pending (its INVALIDATE
// seen, its UPDATE not) are parked instead (park.go): a backend read started
// then could precede the write's Redis write yet be answered after the write
// is acknowledged. The write's UPDATE answers them — with its value and
// version for a PUT, StatusNotFound for a DEL — as a hit (FlagHit, a work
// unit each) when it refreshed the node's copy, else like a relayed miss; a
// reader parked under a write is answered only by the UPDATE of that write
// or a later one, never by an older write's. A failed write's UPDATE, or
// none within Config.ParkTimeout, sends the parked readers to the shim as
// one backend read, started after all of them arrived; readers that arrive
// while that late write is still pending read the shim at once. So a hot
// key's reads during its writes stay at the cache layer, as the simulator
// assumes, instead of each reaching the storage shard the key is hot on.
//
// # Cache updates (§4.3, NetCache §4.4)
//
// Misses of keys the node owns under its map are counted in a hot-key
// detector (package hotkey: Count-Min sketch plus Bloom filter); hits on
// cached keys are counted exactly per key. Every Config.Interval the node
// plans the interval's update (hotkey.Detector.Plan): it evicts the planned
// victims, then inserts each planned key that it still owns by adding an
// invalid placeholder and sending FETCH to the key's shim. The FETCH_REPLY
// fills the placeholder subject to the coherence rules below; a failed FETCH
// removes it. Placeholders count against Config.Capacity (the detector
// never tracks more keys than that); Config.CapacityBytes is enforced when a
// value arrives: a fill (or an update) that would exceed it is refused and
// the entry removed. Entries left invalid by a write whose phase 2 never
// arrived (a DEL, or a lost UPDATE) are fetched again by the next interval,
// with the same rules; a key that is gone is then dropped.
//
// # Coherence (§4.3)
//
// Every write gets a version v from its shim. Phase 1, INVALIDATE(k, v):
// a cached entry becomes invalid and its version becomes max(version, v);
// the node always acknowledges, also for keys it does not hold, and sets
// FlagHit on the acknowledgement iff it held an entry for the key (valid or
// a placeholder), which tells the shim that the write has a copy to pay
// for (see Emulated capacity). Phase 2,
// UPDATE(k, v, value): applied iff the entry exists and its version is v (so
// the node saw this write's invalidation and no later one); the node always
// acknowledges. A fill carries C, the shim's version counter read under the
// key's lock together with the value, so every write before the read has a
// version ≤ C and every later one > C. It is applied iff the entry is the
// very placeholder (pointer identity) the FETCH was sent for, still invalid,
// and C ≥ its version: a write whose invalidation reached the placeholder
// after the read has a larger version and keeps the stale fill out. Since
// FETCH is a call matched by sequence number, a late reply can never fill a
// placeholder created after it.
//
// # Map changes (§4.4)
//
// SetMap switches the partition map atomically. A node that is Failed or
// absent in the new map drops every entry, because shims stop invalidating
// it; one that returns starts empty. Otherwise only the entries whose keys
// moved to another member are dropped. Map switches and the ownership check
// of insertions are serialised, so a key is never inserted under a map that
// is no longer current.
//
// # Miss-ratio curve
//
// Every GET of a key the node serves (a hit, or a miss of a key it owns) is
// also a reference for an online estimate of the LRU miss-ratio curve of
// the node's reads (SHARDS, package hotkey/mrc), kept over windows of
// Config.MRCWindow by two alternating estimators, which MissRatioCurve
// (GET /mrc) reports with the node's hits in the same window, for a
// control loop that sizes layers from the curves as D3N does. The design
// and its costs are in curve.go.
//
// # Emulated capacity (§6.1)
//
// Config.EmulatedRate gives the node the capacity of an emulated switch, in
// work units per second (package capacity), as the paper's testbed rate
// limits its emulated switches to the throughput of a rack's servers. The
// cost model is the simulator's (sim, CoherenceCost 1): a hit costs 1 unit,
// an INVALIDATE or an UPDATE of a key the node holds an entry for costs 1,
// and everything else is free — a miss is forwarded to the shim and
// relayed back at line rate, an INVALIDATE or UPDATE of a key the node does
// not hold finds nothing to do. A hit's unit is taken on the reader
// goroutine before its reply: at the rate limit the reader waits, and the
// reads behind it wait in the socket buffer, as packets at a busy switch.
// Before it waits, the reader sends the replies of its batch it has
// finished, so a reply waits for its own unit, not for those of the reads
// received with it. The rest is control traffic, which the reader serves
// ahead of the reads of each receive batch (transport.Config.Urgent): an
// INVALIDATE or UPDATE is acknowledged before its unit is spent, so a
// writer waits for neither the node's queue of reads nor the unit; a PING
// measures whether the node is alive, not how long its queue is; misses
// are forwarded and the shim's replies relayed at once. Stats.Work and
// distcache_work_units_total count the units; distcache_work_capacity is
// the rate (0: unlimited, the default, where the hit path still does not
// allocate).
package cachenode
