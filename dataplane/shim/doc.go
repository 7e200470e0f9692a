// Package shim is the storage shim: the sidecar in front of one Redis shard
// (one per storage server, DESIGN.md part 5). It serves the cache layers'
// misses and the clients' writes, and it keeps every cached copy coherent
// with DistCache's two-phase protocol (Liu et al., FAST '19, §4.3).
//
// Reads. GET is a Redis GET: a cache node forwards its misses here, and a
// client may read directly (FlagDirect). FETCH is a cache node's insertion
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
//     one (owners.go), in parallel; if any owner does not acknowledge within
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
// number, so a write is executed at most once per (sender, sequence number,
// op): dedup.go keeps the replies of completed writes for DedupTTL and drops
// retransmits of writes still in progress. Re-executing a retransmitted PUT
// after a later write would silently undo that write.
//
// Every request is served on its own goroutine, at most MaxInFlight at a
// time; beyond that the shim sheds load with StatusOverloaded. Requests for
// keys the partition map stores on another shard get StatusNotOwner.
//
// Emulated capacity (§6.1). Config.EmulatedRate gives the shim the
// throughput of an emulated storage server in work units per second
// (package capacity), as the paper's testbed rate limits its storage
// servers. The cost model is the simulator's (sim, CoherenceCost 1): a GET,
// FETCH, PUT or DEL costs 1 unit, taken on the reader goroutine after the
// cheap refusals (not owner, retransmitted write, overload) and before the
// request is handed to its goroutine, so at the limit the reader waits and
// later requests queue in the socket buffer, as at a busy server; a write
// costs 1 more per owner whose INVALIDATE acknowledgement carried FlagHit
// (a copy it invalidates and updates), taken after phase 1 and before Redis
// is written, on the write's goroutine but from the same capacity. Refused
// requests and retransmits are free. Stats.Work and
// distcache_work_units_total count the units, distcache_work_capacity is
// the rate (0: unlimited, the default), distcache_coherence_copies_total
// the copies. Note that the acknowledgements of phase 1 arrive on the same
// socket as the requests: at the limit they wait behind the requests queued
// before them.
package shim
