// Package fault is the fault-injection suite: it runs a standalone
// DistCache cluster (`distcache up`) and a checked workload (`distcache
// check`) inside a network namespace of their own, injects faults into the
// real processes and their traffic (package standalone/faults) on a
// schedule (package test/fault/schedule), and requires the checker's
// verdict: every key's history linearizable, no acknowledged write lost.
//
// `go test ./test/fault` runs a short fixed set: the zombie scenario (stale
// clients, two cache nodes paused past the failover grace period, two quick
// remaps, the nodes resumed) and one schedule per fault class for a
// handful of classes. `make chaos-local SCHEDULES=N SEED=S` runs N random
// schedules (TestChaosLocal) and writes a report. The tests need root for
// the namespaces and skip without it. See docs/reliability.md.
package fault
