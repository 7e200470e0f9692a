/*
 * DistCache's packet headers for P4_16, shared by the TNA (Tofino) and
 * v1model (stratum-bmv2) pipelines.
 *
 * distcache_h is the fixed 64-byte header of dataplane/wire (header.go):
 * every field at a fixed offset, in network byte order, so that a parser
 * extracts it whole and the cache lookup matches on key_digest.
 * stratum_pipelines/headers_test.go checks this file against the Go
 * encoder field by field, and the constants below against the Go ones.
 */
#ifndef DISTCACHE_HEADERS_P4
#define DISTCACHE_HEADERS_P4

typedef bit<48> mac_addr_t;
typedef bit<32> ipv4_addr_t;

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<8>  IP_PROTO_UDP   = 17;

/* The magic and the protocol version every DistCache datagram starts with. */
const bit<16> DC_MAGIC   = 0xDCAC;
const bit<8>  DC_VERSION = 1;

/* Ops (wire.Op). A reply's op is its request's op + 1. */
const bit<8> DC_OP_GET            = 1;
const bit<8> DC_OP_GET_REPLY      = 2;
const bit<8> DC_OP_PUT            = 3;
const bit<8> DC_OP_PUT_REPLY      = 4;
const bit<8> DC_OP_DEL            = 5;
const bit<8> DC_OP_DEL_REPLY      = 6;
const bit<8> DC_OP_INVALIDATE     = 7;
const bit<8> DC_OP_INVALIDATE_ACK = 8;
const bit<8> DC_OP_UPDATE         = 9;
const bit<8> DC_OP_UPDATE_ACK     = 10;
const bit<8> DC_OP_FETCH          = 11;
const bit<8> DC_OP_FETCH_REPLY    = 12;
const bit<8> DC_OP_PING           = 13;
const bit<8> DC_OP_PONG           = 14;
const bit<8> DC_OP_RMW            = 15;
const bit<8> DC_OP_RMW_REPLY      = 16;
const bit<8> DC_OP_MORE           = 17;
const bit<8> DC_OP_FLUSH          = 18; /* shim to cache node only: a switch never sees it */
const bit<8> DC_OP_FLUSH_ACK      = 19;
const bit<8> DC_OP_RENEW          = 20; /* cache node to shim only: a switch never sees it */
const bit<8> DC_OP_RENEW_REPLY    = 21;
const bit<8> DC_OP_BUNDLE         = 0x80;

/* Flags (wire.Flag), one bit each in the flags byte. */
const bit<8> DC_FLAG_HIT        = 0x01;
const bit<8> DC_FLAG_TELEMETRY  = 0x02;
const bit<8> DC_FLAG_FRAGMENTED = 0x04;
const bit<8> DC_FLAG_DIRECT     = 0x08;
const bit<8> DC_FLAG_TRACKED    = 0x10;
const bit<8> DC_FLAG_CACHE_ONLY = 0x20;
const bit<8> DC_FLAG_AUTH       = 0x40;

/*
 * What a switch caches (wire.SwitchCacheable): keys of 1 to 32 bytes,
 * parsed as up to four 8-byte words and a tail; values of at most 128
 * bytes, sixteen 8-byte register words. Everything else is a miss.
 */
const bit<16> DC_SWITCH_MAX_KEY_LEN   = 32;
const bit<32> DC_SWITCH_MAX_VALUE_LEN = 128;

/* Statuses (wire.Status) a switch sets on its replies. */
const bit<8> DC_STATUS_OK        = 0;
const bit<8> DC_STATUS_NOT_FOUND = 1;
const bit<8> DC_STATUS_UNAVAILABLE = 3; /* a hedged read the switch cannot serve */

header ethernet_h {
    mac_addr_t dst_addr;
    mac_addr_t src_addr;
    bit<16>    ether_type;
}

header ipv4_h {
    bit<4>      version;
    bit<4>      ihl;
    bit<8>      diffserv;
    bit<16>     total_len;
    bit<16>     identification;
    bit<3>      flags;
    bit<13>     frag_offset;
    bit<8>      ttl;
    bit<8>      protocol;
    bit<16>     hdr_checksum;
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
}

header udp_h {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

/* dataplane/wire's fixed header: 64 bytes. */
header distcache_h {
    bit<16>  magic;          /*  0: DC_MAGIC */
    bit<8>   version;        /*  2: DC_VERSION */
    bit<8>   op;             /*  3: DC_OP_* */
    bit<8>   flags;          /*  4: DC_FLAG_* */
    bit<8>   status;         /*  5: 0 in requests */
    bit<16>  key_len;        /*  6: 1 … wire.MaxKeyLen */
    bit<64>  seq;            /*  8: echoed in the reply */
    bit<128> key_digest;     /* 16: the lookup table's exact match */
    bit<32>  node_id;        /* 32: telemetry: the node that answered */
    bit<32>  node_load;      /* 36: and its load (DistCache §4.2) */
    bit<32>  value_len;      /* 40: the whole value's length */
    bit<32>  frag_offset;    /* 44: where this datagram's value bytes start */
    bit<64>  value_version;  /* 48: coherence (DistCache §4.3) */
    bit<64>  map_version;    /* 56: the sender's partition map */
}

/*
 * The key and a switch-sized value after distcache_h, parsed whole (a
 * key of at most DC_SWITCH_MAX_KEY_LEN bytes, a value of at most
 * DC_SWITCH_MAX_VALUE_LEN): 8-byte words, then a tail of 1-byte headers.
 * A hit's reply is the request with the value appended, so the key must
 * be parsed for the value to follow it.
 */
header word_h {
    bit<64> w;
}

header byte_h {
    bit<8> b;
}

#endif /* DISTCACHE_HEADERS_P4 */
