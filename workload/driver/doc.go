// Package driver is the workload driver behind `distcache bench`: it offers a
// Zipf workload to a running DistCache cluster through the client library,
// once as NoCache (every read straight to its storage shim) and once as
// DistCache (reads routed over the cache layers), and measures what the
// paper measures (Liu et al., "DistCache: Provable Load Balancing for
// Large-Scale Storage Systems with Distributed Caching", FAST '19, §6).
//
// # Open loop
//
// Load is offered open loop: a dispatcher issues operations at a fixed
// offered rate (evenly spaced, or Poisson arrivals with Config.Poisson), each
// to one of at most Config.Concurrency workers. It does not wait for replies,
// so a slow cluster does not slow the offered load down, as it would in a
// closed loop. Only when every worker is busy does the dispatcher wait for
// one; such issues are counted as late, and the achieved rate falls below the
// offered one: the sign of saturation. Each operation is a Put with
// probability Config.WriteRatio, else a Get, of a key drawn from a Zipf
// distribution over Config.Keys ranks (workload.Zipf), each rank mapped to a
// key id by a seeded permutation (workload.Scrambler, seeded like the
// simulator's) so that popularity is unrelated to the key's id and thus to
// its placement. Every phase is bounded both in operations and in time.
//
// # Capacity
//
// The paper's testbed emulates storage servers and cache switches with rate
// limits (§6.1), and so does a standalone cluster: every shim and cache node
// spends work units from an emulated capacity (package
// dataplane/capacity). The throughput of a system is the largest offered
// rate at which no cache node and no storage server is over its capacity
// (§6.2, and the simulator's definition in package sim). The driver measures
// it without overloading anything: over the measured window it reads every
// member's work units (Cluster.Work), computes each member's utilisation
// u = units / (capacity × elapsed), and since load grows linearly with the
// offered rate, the system would saturate its busiest member at
// achieved / u_max operations per second. Divided by one storage server's
// capacity this is the normalized throughput the paper plots (× one
// server). With a failure, u_max and the achieved rate are taken over the
// part of the window before the kill.
//
// When Config.Rate is 0 the offered rate is chosen per mode by a probe: a
// short run at 20 % of the storage servers' summed capacity, whose highest
// utilisation u gives R = 0.7 × achieved / u, an offered rate at which the
// busiest member runs at about 70 % of its capacity.
//
// # Run
//
// Run writes the hottest Config.Preload ranks once, then runs each mode in
// turn (NoCache first): for DistCache an unmeasured warm-up so the nodes'
// hot-key detectors fill their caches, the probe if needed, and the measured
// window, with the failure of Config.Failure injected into DistCache's
// window (as the paper's fig. 11): Cluster.Kill then Cluster.Restart
// (FailKill), Cluster.Pause then Cluster.Resume (FailPause), or Cluster.Slow
// then Cluster.Unslow (FailSlow).
// With Config.ShiftAt the hot set shifts in DistCache's measured window:
// from that time after the window starts (the failure's clock), the
// dispatcher maps every rank it issues by a second seeded permutation
// (an atomic pointer swap, read once per issue), so the hot keys turn cold
// and others hot with the same skew; the preload wrote the hottest keys of
// both permutations, and the timeline's per-interval hit ratio shows the
// caches adapting.
// Before each mode and before the read-back below it waits, for a bounded
// time, until no emulated server is still busy with what an earlier phase
// left queued, and it paces the preload and the read-back to half the
// storage servers' summed capacity: an emulated server that queues longer
// than the transport's first retransmission gets every request again.
//
// # Lost writes
//
// The driver writes a key with at most one write in flight (a per-key lock)
// and remembers, per key, the value of the last acknowledged write and the
// values of the writes whose outcome is unknown (no reply before the
// operation's timeout: the shim may apply them later). After every mode it
// reads every key it wrote back twice, through the routed client (what a
// user sees, caches included) and straight from storage, and counts the keys
// whose value is neither the last acknowledged one nor one of the unknown
// ones: lost writes, which a coherent cache must never produce (§4.3).
package driver
