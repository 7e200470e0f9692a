// Package standalone runs a CacheCluster without Kubernetes, as local
// processes: the same YAML the operator reads, laid out by the same topology
// code (package plan over package topology), served by the same binaries.
// Like Dapr's self-hosted mode next to its Kubernetes mode.
//
// Run is the body of `distcache up`: it publishes version 1 of the partition
// map to a file in the run directory, starts a redis-server and a storage
// shim per shard and a cache node per layer member under a supervisor
// (package supervisor: logs, restarts with backoff), waits until every one
// is ready, then runs
//   - the control loop (package controlloop), which probes the cache nodes
//     and remaps a failed one by consistent hashing with the operator's
//     failover policy (DistCache §4.4),
//   - a scraper that reads every process's work counters for `distcache
//     status` and the benchmark's load tables, and
//   - the control API (package control) on a Unix socket in the run
//     directory,
//
// until its context ends or the control API asks it to shut down; then it
// stops every process, leaving nothing running.
package standalone
