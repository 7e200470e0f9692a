// Package copies decides how many cached copies each hot key gets, by
// weighing what a copy saves against what it costs, and on which cache
// nodes they go. It is plain Go, shared by the simulator and the control
// loops of the operator and of standalone mode, so that the simulator
// predicts the system that runs.
//
// Plain DistCache (FAST '19, §3.1) caches every hot key once per layer.
// Two things make that wrong for some keys:
//
//   - Theorem 1 (§3.2) guarantees balance only while no key's read rate
//     exceeds half a cache node's throughput. Under Zipf-1.2 the hottest
//     key alone draws about a fifth of all queries: two copies cannot
//     carry it, and the whole system is capped at what two nodes serve.
//   - Every cached copy costs the key's storage server coherence work on
//     each write: an invalidation and an update, each acknowledged (§4.3).
//     A write-hot key can cost its server more than caching saves it, as
//     the logically disaggregated cache argues for redundant copies in
//     general: redundancy is worth only what it buys.
//
// The decision works with a cost model (Model): a cache node and a storage
// server each have a capacity; a read of a cached key costs the copy that
// serves it one unit and its server nothing; a write costs the server one
// unit plus CoherenceCost per copy, and each copy NodeWriteCost units (the
// invalidation and the update). For a key with read rate r and write rate
// w, c copies leave its server w·(1 + γ·c) of work where no copy leaves it
// r + w, and put r/c + 2·w on each copy when the router splits its reads
// evenly.
//
// Decide finds the largest factor R by which the reported rates can grow
// while some assignment of copies keeps every storage server within its
// capacity (bisection on R), and returns that assignment. At a given R,
// keys are taken hottest first:
//
//  1. A key gets the fewest copies that keep each one's share (its reads
//     split evenly, plus the coherence work of its writes) within a node,
//     c_min = ⌈r / (C_node − 2·w)⌉; none if that is more than MaxCopies or
//     if caching would not save its server work (r ≤ γ·c_min·w: writes
//     dominate).
//  2. Then, hottest first, each cached key gets the copies it wants: one
//     per layer (plain DistCache's choice for the router) and enough that
//     each copy stays within half a node, Theorem 1's precondition,
//     ⌈r / (½·C_node − 2·w)⌉ — as many of them as its server has room for
//     the coherence work of. Keys whose servers have room get what the
//     theorem asks for; the keys of the servers that limit the system keep
//     only what their reads need.
//
// A key with fewer copies than layers goes to its least loaded owners (a
// choice made once, when the decision is taken: the two-choice allocation
// of balls into bins); with more copies than layers, the extra ones go to
// the upper layer's ring successors of its owner (Nodes.Extra), as the
// simulator's replication of hot keys always did. Cache nodes hold at most
// Model.Slots keys each.
//
// Hysteresis: a key that is cached keeps being cached until its reads fall
// below (1 − Hysteresis) of the break-even point, and a key that is not
// needs (1 + Hysteresis) of it; the number of copies a key needs moves
// only when its share per copy leaves the band
// [(1 − Hysteresis), (1 + Hysteresis)] of a node. A decision therefore
// does not flap when rates wobble around a threshold.
package copies
