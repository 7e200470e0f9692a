// Package checker runs a checked workload against a DistCache cluster and
// decides whether the cluster kept its promises: every key's history
// linearizable, and no acknowledged write lost. It is the library behind
// `distcache check`, meant to run while faults are injected (processes
// killed or stopped, networks partitioned or delayed).
//
// # Run
//
// A run follows the cluster's partition map file (package
// dataplane/mapwatch) and drives it through real clients (package client):
//
//  1. Preload: every key is written once, so its history starts from a known
//     value (a write that is not acknowledged is sent again, for a bounded
//     time).
//  2. Workload: Config.Workers workers over Config.Clients clients issue
//     gets, puts and deletes of keys drawn from a Zipf distribution, every
//     put with a value unique to the run, bounded by Config.Duration and by
//     Config.MaxOps. Config.Ready is called as it starts.
//  3. Read-back: every key is read once more through the cache (a routed
//     read, retried for a bounded time while the cluster heals) and, where
//     the key's shard has a known Redis address, straight from Redis.
//  4. Check: the history (package workload/history) is checked for
//     linearizability per key, and each final read against the values the
//     key's writes could have left.
//
// Every operation is recorded with its call and return times. A read that
// fails observed nothing and is left out. A write refused with a coherence
// timeout (client.ErrCoherence) is guaranteed not applied and is left out;
// any other failed write, a timeout included, may or may not have been
// applied and is recorded with an unknown outcome.
//
// # Stale clients
//
// The first Config.StaleClients clients follow the map only while they are
// not frozen: Checker.Freeze keeps them on the map they have, Checker.Thaw
// gives them the current one. A fault test freezes them, changes the map,
// and so runs clients that route by an old map next to clients that follow.
// The preload and the read-back use a client of their own that always
// follows the map.
//
// # Verdict
//
// The Verdict counts the operations by kind and outcome and lists, per key,
// the linearizability violations (with the shortest failing history and
// porcupine's visualization), the keys not checked in time, and the lost
// writes of each read-back. Its Result is Pass, Fail (a violation or a lost
// write) or Inconclusive (nothing wrong found, but some key was not checked
// or not read back).
package checker
