// Package standalone runs a CacheCluster without Kubernetes, as local
// processes: the same YAML the operator reads, laid out by the same topology
// code (package plan over package topology), served by the same binaries.
// Like Dapr's self-hosted mode next to its Kubernetes mode.
//
// Run is the body of `distcache up`: it publishes version 1 of the partition
// map to a file in the run directory and starts, under a supervisor (package
// supervisor: logs, restarts with backoff), a redis-server and a storage
// shim per shard, a cache node per layer member and, once every node is
// ready, the control loop (`distcache controlloop`, package controlloop),
// which probes the cache nodes and remaps a failed one by consistent
// hashing with the operator's failover policy (DistCache §4.4). Run writes
// the loop's configuration file into the run directory; the loop publishes
// every new map version to the map file and appends every member state
// change to the events file there. After the loop come the Redis-compatible
// gateway (`distcache gateway`, package gateway), through which Redis
// clients reach the cluster, unless the plan leaves it out, and a
// Prometheus when the plan has one.
//
// The control loop is a process of its own, as the operator is a pod of
// its own, so that it can be killed or paused without the cluster: while it
// is down the data plane keeps serving with the map last published and no
// member is failed over or restored. The supervisor restarts it like any
// other process; it resumes from the published map and begins the grace
// periods anew for the members it sees not ready.
//
// Once the cluster is ready Run also runs
//   - the probes of every process for the status (Ready, Degraded),
//   - a scraper that reads every shim's and node's work counters for
//     `distcache status` and the benchmark's load tables, and
//   - the control API (package control) on a Unix socket in the run
//     directory, serving from the start: member states come from the map
//     file and failover events from the events file, so both survive a
//     restart of the loop,
//
// until its context ends or the control API asks it to shut down; then it
// stops every process, leaving nothing running.
package standalone
