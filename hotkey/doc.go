// Package hotkey is the hot-key detector of a cache node: it finds the
// uncached keys of the node's partition that are queried often enough to be
// worth caching, and measures the popularity of the keys already cached so
// that the node's agent can decide which entries to replace.
//
// # Algorithm
//
// The design follows the query-statistics module of NetCache (Jin et al.,
// SOSP '17, §4.4) as reused by DistCache (Liu et al., FAST '19, §4.3 "cache
// update" and §5):
//
//   - Uncached keys ([Detector.RecordMiss]) are counted in a Count-Min sketch
//     of 4 rows of saturating 32-bit counters. The estimate of a key is the
//     minimum of its 4 counters; it never underestimates the true count, and
//     with w counters per row it overestimates by more than e·N/w (N = misses
//     recorded in the interval) with probability at most e^-4.
//   - When a key's estimate reaches the threshold, the key is looked up in a
//     Bloom filter of 3 bit arrays (one hash function per array). If it is
//     absent it is added and reported as a [Candidate]; the Bloom filter thus
//     makes every hot key reported at most once per interval, so the report
//     list stays small even though a hot key keeps being queried. A Bloom
//     false positive can suppress the report of a hot key for one interval,
//     as in NetCache.
//   - Cached keys ([Detector.RecordHit]) are counted exactly, with one
//     counter per key registered with [Detector.Track]. NetCache keeps these
//     per-key counters next to the cached values in the switch; here they
//     live in the detector so that the agent sees both kinds of counts in one
//     place.
//   - Once per interval the agent calls [Detector.Plan], which compares the
//     reported candidates with the cached keys, returns which keys to insert
//     and which to evict, and resets all counters (the "counters reset every
//     interval" of DistCache §5), so popularity is always measured over the
//     last interval only.
//
// # Hashing
//
// Each key is hashed once with a seeded XXH3 function (placement/hashing)
// whose seed is derived from [Config.Seed] with the label "hotkey", so the
// detector's hash is independent of the placement functions even when both
// are configured with the same seed (otherwise all keys of one partition
// would share hash bits and crowd into part of the sketch). The 4 sketch rows
// and the 3 Bloom arrays use the Kirsch–Mitzenmacher double-hashing family
// g_i = h1 + i·h2 (mod 2^64), i = 0..6, where h1 is the 64-bit XXH3 value and
// h2 is a bijective 64-bit mix (the MurmurHash3 finalizer) of h1 forced odd:
// rows use i = 0..3 and Bloom arrays i = 4..6, so a sketch collision does not
// imply a Bloom collision. g_i is mapped to [0, n) with the multiply-high
// reduction ⌊g_i·n / 2^64⌋, so widths need not be powers of two. Kirsch and
// Mitzenmacher ("Less hashing, same performance", ESA '06) show that this
// family keeps the asymptotic false-positive rate of independent hash
// functions; the package tests check the Count-Min error bound empirically.
//
// # Concurrency and cost
//
// A [Detector] is safe for concurrent use. The record paths (RecordMiss,
// RecordHit, Estimate) take no lock in the common case and do not allocate:
// sketch counters are updated with compare-and-swap (to saturate instead of
// wrapping), Bloom bits are read with atomic loads, statistics counters are
// striped over cache lines, and the per-key counters of cached keys are found
// in copy-on-write maps published through atomic pointers. Only the first
// report of a key in an interval takes a small mutex. Track and Untrack copy
// one of 256 map shards and are meant for the agent's control path, not the
// query path.
package hotkey
