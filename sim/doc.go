// Package sim reproduces the evaluation of the DistCache paper (Liu et al.,
// "DistCache: Provable Load Balancing for Large-Scale Storage Systems with
// Distributed Caching", FAST '19, §6) on the project's own placement and
// routing core, at scales no test cluster reaches.
//
// A Config describes a leaf-spine deployment (§6.1): storage racks of servers
// with throughput T each, one leaf cache node bound to every rack, a layer of
// spine cache nodes, each cache node with the aggregate throughput of a rack,
// and a Zipf query stream over up to 10^8 keys with a write ratio. The
// partition map is built and compiled exactly as the operator does
// (partmap.Build, partmap.Compile); every cache node holds the hottest keys of
// its own partition, the steady state of its hot-key detector.
//
// The throughput of a strategy is the largest offered rate at which no cache
// node and no storage server is over capacity, normalised to one server. The
// hottest ranks are placed individually and the rest of the probability mass
// is spread evenly over the servers. DistCache's split of each key's reads
// among its copies comes from replaying a sampled query stream through the
// real power-of-k router (package routing), whose simulated senders learn
// loads only from delayed telemetry in replies (§4.2), never from an oracle;
// Optimal computes the max-flow optimum of §3.2 for Adaptive's placement.
// DistCache is plain DistCache, one copy per layer, as the data plane runs
// it; Adaptive gives each hot key the copies package copies decides by cost
// and benefit: more than one per layer for a key hotter than Theorem 1
// allows (§3.2), fewer or none where the coherence work of its writes
// (§4.3) costs its server more than they save.
//
// Experiments reproduce figures 9a–c (skew, cache size, scale), 10 (write
// ratio, with the two-phase coherence cost model of Config.CoherenceCost) and
// 11 (failures remapped by consistent hashing); WriteReport renders each as
// CSV, markdown and a PNG plot. docs/simulation.md records the results next
// to the paper's claims.
package sim
