// Package shim is the storage shim: the sidecar in front of one Redis shard
// (one per storage server, DESIGN.md part 5). It serves the cache layers'
// misses and the clients' writes, and it keeps every cached copy coherent
// with DistCache's two-phase protocol (Liu et al., FAST '19, §4.3).
//
// Reads. GET is a Redis GET: a cache node forwards its misses here, and a
// client may read directly (FlagDirect). GETs of one key that wait together
// share one Redis read, and the reads of different keys that arrive while
// one is under way go to Redis together as one pipeline (package
// redisbatch).
// Without an emulated capacity, the GETs of one receive batch are served
// together when the batch ends: one Redis round trip for their keys, one
// send for their replies (readbatch.go).
// FETCH is a cache node's insertion
// of a hot key: the shim answers, under the key's lock, with the value and
// the version counter C read under that lock. Every write of the key
// acknowledged before the FETCH has a version ≤ C and every later write a
// version > C, so the node can tell whether the fill is older than an
// invalidation it has already seen (it fills iff C ≥ its entry's version).
// Only a current owner of the key may FETCH: a node that the current map
// does not name would not be invalidated by later writes.
//
// Writes. PUT and DEL are serialised per key (keylock.go) and go through the
// two phases of §4.3 (write.go):
//
//  1. take a version v = max(wall clock in ns, last + 1): monotonic within
//     the shim, and above every version of a previous run because the clock
//     moved on;
//  2. phase 1: INVALIDATE(k, v) to the owner of k in every cache layer under
//     the current map and, for PrevMapGrace after a map change, the previous
//     one (owners.go), in parallel — each owner that may hold an entry for
//     k: the shim's directory of copies (holders.go) lets a write skip the
//     nodes that never fetched k; if any owner does not acknowledge within
//     InvalidateTimeout the write fails with StatusCoherence and Redis is
//     not touched, because a copy may still be valid somewhere. A previous
//     owner that the current map no longer lists as Active (removed as
//     failed) is sent one INVALIDATE without waiting: it drops its copies
//     when it loads the map and clients stop routing to it, and waiting
//     for a dead node would refuse its keys' writes for the whole grace.
//     An owner that held an entry for the key sets FlagHit on its
//     acknowledgement: the write has a copy to invalidate and update;
//  3. write Redis (SET or DEL); on error reply StatusUnavailable;
//  4. reply to the client with v: the write is linearised here;
//  5. release the key's lock and, for a PUT, run phase 2: UPDATE(k, v,
//     value) to the owners that acknowledged, so the hot copies become valid again. A
//     node applies it only if its copy's version is still v; phase 2 is best
//     effort because an invalid copy is safe (it is a miss).
//
// Requests are retransmitted by the transport with the same sequence
// number, so a request is served at most once per (sender, sequence number,
// op) while it is in progress, and a write at most once at all: dedup.go
// drops retransmits of requests still being served and keeps the replies of
// completed writes for DedupTTL. Re-executing a retransmitted PUT after a
// later write would silently undo that write; serving a retransmitted read
// again would only cost the emulated capacity a second unit for nothing.
// The table dies with the process, so the Redis write itself is made once
// across restarts too (applied.go): a script writes the value and a mark
// of the request (AppliedPrefix, expiring after DedupTTL) atomically, and
// does nothing where the mark exists. A restarted shim that receives the
// retransmit of a write its previous run applied (and died before
// acknowledging) acknowledges it without writing, and ends its phase 2
// without a value.
//
// Every request (or a receive batch's GETs, together) is served on a
// goroutine of its own, at most MaxInFlight requests at a time; beyond that the shim sheds load with StatusOverloaded. Requests for
// keys the partition map stores on another shard get StatusNotOwner.
//
// Emulated capacity (§6.1). Config.EmulatedRate gives the shim the
// throughput of an emulated storage server in work units per second
// (package capacity), as the paper's testbed rate limits its storage
// servers. The cost model is the simulator's (sim, CoherenceCost 1): a GET,
// FETCH, PUT or DEL costs 1 unit, and a write 1 more per owner whose
// INVALIDATE acknowledgement carried FlagHit (a copy it invalidates and
// updates), taken after phase 1 and before Redis is written. Units are
// taken on the request's goroutine, in arrival order, never on the reader:
// the reader keeps reading the acknowledgements of the shim's own phase 1
// and phase 2 calls at any load, so a write's coherence round trips do not
// wait behind the requests queued for the capacity. A read (GET, FETCH)
// whose unit is further away than QueueTimeout (the clients' attempt
// timeout) is shed with StatusOverloaded at no cost: its requester has
// given up on it, and a server that served abandoned requests would fall
// ever further behind its retransmissions. Refused requests and retransmits
// are free. Stats.Work and distcache_work_units_total count the units,
// distcache_work_capacity is the rate (0: unlimited, the default),
// distcache_coherence_copies_total the copies, Stats.Shed the shed reads.
package shim
