/*
 * The structs the cache pipelines share: the parsed headers, the
 * metadata one packet carries through ingress, and the hot-key digest
 * sent to the controller. Architecture-neutral; the v1model and TNA
 * programs include it after headers.p4.
 */
#ifndef DISTCACHE_TYPES_P4
#define DISTCACHE_TYPES_P4

#include "headers.p4"

/* The controller's packet-out (a FETCH the controller sends through the
 * switch) and packet-in (the FETCH_REPLY the switch has applied). */
@id(0x04000001) @controller_header("packet_in")
header packet_in_h {
    bit<9> ingress_port;
    bit<7> pad;
}

@id(0x04000002) @controller_header("packet_out")
header packet_out_h {
    bit<9> egress_port;
    bit<7> pad;
}

struct headers_t {
    packet_out_h packet_out;
    packet_in_h  packet_in;
    ethernet_h   ethernet;
    ipv4_h       ipv4;
    udp_h        udp;
    distcache_h  dc;
    word_h[4]    key_words;
    byte_h[7]    key_tail;
    word_h[16]   value_words;
    byte_h[7]    value_tail;
}

/* What a packet addressed to the switch is for (the switch_address table). */
const bit<8> ROLE_NONE      = 0; /* not addressed to the switch: forwarded */
const bit<8> ROLE_READS     = 1; /* a read port: GETs of one storage shard */
const bit<8> ROLE_COHERENCE = 2; /* the coherence port: INVALIDATE, UPDATE, FETCH_REPLY */

struct metadata_t {
    bit<8>   role;
    bit<32>  shard;       /* the read port's storage shard */
    bit<32>  slot;        /* the cache slot of a cached key */
    bit<32>  shim_addr;   /* the shard's shim, where a miss goes */
    bit<16>  shim_port;
    bit<1>   cacheable;   /* the key was parsed: at most DC_SWITCH_MAX_KEY_LEN bytes */
    bit<1>   value_fits;  /* an UPDATE's or FETCH_REPLY's value was parsed whole */
    bit<1>   drop;
    bit<1>   reply;       /* send the packet back to its sender */
    bit<1>   to_cpu;      /* send the packet to the controller */
    bit<16>  key_left;    /* parser: key bytes not yet extracted */
    bit<16>  value_left;  /* parser: value bytes not yet extracted */
    bit<8>   words;       /* value_len / 8 */
    bit<8>   tail;        /* value_len % 8 */
    bit<32>  node_id;     /* the switch's member id in the partition map */
    bit<64>  map_version; /* the partition map the switch's entries follow */
    bit<32>  load;        /* reads in the current load window */
    bit<64>  tail_word;   /* the value word the tail bytes come from */
    bit<16>  hot_count;   /* Count-Min estimate of an uncached key */
    bit<256> key;         /* the parsed key, left-aligned, for a hot-key report */
}

/* The hot-key report (NetCache §4.3): an uncached key whose Count-Min
 * estimate crossed the threshold and that the Bloom filter has not seen,
 * with the key itself (left-aligned, zero-padded) for the controller's
 * FETCH. */
struct hot_key_t {
    bit<128> key_digest;
    bit<16>  key_len;
    bit<256> key;
    bit<16>  count;
}

#endif /* DISTCACHE_TYPES_P4 */
