/*
 * The sizes of a cache pipeline's tables and registers. The P4Info of
 * each program gives the same sizes (checked by the Go tests), and the
 * software switch (package softswitch) allocates them.
 */
#ifndef DISTCACHE_PARAMS_P4
#define DISTCACHE_PARAMS_P4

/* Keys the switch caches: lookup entries, and slots of every per-key register. */
const bit<32> CACHE_SLOTS = 65536;
/* A slot's value: sixteen 8-byte words (DC_SWITCH_MAX_VALUE_LEN bytes). */
const bit<32> VALUE_WORDS_PER_SLOT = 16;
const bit<32> VALUE_WORDS = 1048576; /* CACHE_SLOTS * VALUE_WORDS_PER_SLOT */
/* Count-Min rows and Bloom filter arrays, each indexed by a 16-bit slice
 * of the key digest (xxh3-128: the slices are independent hashes). */
const bit<32> SKETCH_WIDTH = 65536;
const bit<32> BLOOM_BITS = 65536;
/* Entries of the address and shard tables: storage shards a switch fronts. */
const bit<32> SHARD_ENTRIES = 4096;
/* Reads relayed to shims and not yet answered: a slot per (client, seq). */
const bit<32> RELAY_SLOTS = 65536;
/* A load window in ingress timestamp units (microseconds on v1model). */
const bit<48> LOAD_WINDOW = 100000;

#endif /* DISTCACHE_PARAMS_P4 */
