// Package routing implements DistCache's power-of-k-choices query routing
// (Liu et al., "DistCache: Provable Load Balancing for Large-Scale Storage
// Systems with Distributed Caching", FAST '19).
//
// # Algorithm
//
// DistCache caches every hot key at most once per cache layer, and each layer
// places keys with its own, independent hash function (the partition map, not
// this package, computes the placement). A read therefore has exactly one
// candidate node per layer. The sender routes the read to the candidate with
// the lowest load, normalised by the node's relative capacity (§3.1, "query
// routing with the power-of-two-choices"). With k layers this is the
// power-of-k-choices; the paper's deployment has k = 2.
//
// Why both ingredients matter (§3.2, §3.3): with independent hashes, a set of
// hot keys that collides on one node in one layer is, with high probability,
// spread over many nodes in the other layer. The analysis of §3.2 (Lemma 2)
// uses this expansion to show that a balanced assignment of every key's
// queries to its copies exists. Such an assignment is only useful if the
// router actually steers each query toward the less loaded copy: routing
// statically (always to one layer, or to a uniformly random copy) leaves the
// hottest node with its excess however much spare capacity the other layer
// has. Choosing the less loaded copy is the online, distributed way of
// realising the balanced assignment, so having the choice versus not having
// it is the "life-or-death" difference discussed in §3.3: with it, cache
// throughput grows with the number of cache nodes; without it, one overloaded
// node bounds the whole system. The closed-loop test in this package
// demonstrates the effect on a toy two-layer system.
//
// # Telemetry and staleness
//
// A sender does not poll nodes. Each reply piggybacks the replying node's
// current load (node id + load), and the sender records it in a LoadTable
// (§4.2, "in-network telemetry for cache load distribution"). A LoadMeter is
// what the cache node uses to compute the load it stamps into replies.
//
// Loads learned this way are stale: a sender only refreshes the load of nodes
// it actually sends to. If a node was once seen as busy, the sender stops
// sending to it and therefore never learns that it has become idle; the
// stale, high value would shut the node out forever. To prevent this, an entry
// not refreshed for AgingConfig.StaleAfter is aged: its load decays
// exponentially toward zero with half-life AgingConfig.HalfLife, so an
// unrefreshed node eventually looks attractive again, receives a query, and
// its real load is learned from the reply (§4.2, aging of stale loads).
//
// # Requests in flight
//
// Telemetry only arrives with replies, so a node that stopped answering
// (dead, paused, or slow) sends none, and aging makes its last load decay
// toward zero: by loads alone a silent node looks more attractive the
// longer it is silent. A table made WithStallAfter also counts the
// sender's requests in flight per node (Sent, Answered, Abandoned) and
// keeps, per node, the send time of the latest request it answered (or
// when it last became busy). A node with requests outstanding that has
// answered nothing sent in the last StallAfter is stalled, and Choose
// passes over it while any candidate is not — the least-outstanding
// refinement of power-of-two-choices. outstanding.go explains the rule.
//
// # Tie-breaking
//
// Ties are common: every node starts at load 0, aged entries converge to 0,
// and the loads of idle nodes are all 0. Breaking ties deterministically
// (e.g. by lowest index, i.e. always the first layer) would send every tied
// query to the same layer and recreate exactly the imbalance the scheme is
// meant to remove, and many senders that share the same view would herd onto
// the same node. Ties are therefore broken uniformly at random, which makes
// the tied case behave like random placement rather than like a fixed one.
// Normalised loads within a relative epsilon of 1e-12 count as tied.
//
// # Time
//
// The package is shared by a simulator (virtual time) and a client library
// (wall-clock time), so it never reads the clock: every time-dependent method
// takes "now" as int64 nanoseconds. Callers must use one monotonic time base
// per LoadTable and per LoadMeter.
//
// # Concurrency
//
// LoadTable and LoadMeter are safe for concurrent use and take no mutex on
// their hot paths. LoadTable publishes each node's (load, timestamp) pair with
// a per-entry sequence lock: readers (Load, Router.Choose) never write shared
// memory and only retry while a write to the same entry is in flight; writers
// (Observe) to the same node serialise for the duration of three stores; the
// table's mutex is taken only when a new NodeID grows it. LoadMeter.Add is a
// lock-free CAS loop on one word. A Router holds a random source and counters
// and is not safe for concurrent use: use one Router per goroutine (or per
// simulated client), all sharing one LoadTable.
package routing
