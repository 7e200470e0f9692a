/*
 * The v1model parser, deparser and checksums of the cache pipelines.
 *
 * A UDP datagram whose payload starts with DC_MAGIC and DC_VERSION is
 * DistCache's: its 64-byte header is extracted whole. A key of at most
 * DC_SWITCH_MAX_KEY_LEN bytes without a MAC tag is extracted too
 * (meta.cacheable), and the value of an UPDATE or FETCH_REPLY when it is
 * whole and of at most DC_SWITCH_MAX_VALUE_LEN bytes (meta.value_fits):
 * wire.SwitchCacheable. A key the switch cannot parse is never cached, so
 * every packet of it is forwarded, or acknowledged, as a miss; an
 * INVALIDATE depends only on its key, so a write of a value too big for
 * the switch still invalidates the switch's copy.
 */
#ifndef DISTCACHE_V1MODEL_PARSER_P4
#define DISTCACHE_V1MODEL_PARSER_P4

#include <core.p4>
#include <v1model.p4>
#include "../include/types.p4"

/* The port the controller's packet-out arrives on and packet-in leaves by. */
const bit<9> CPU_PORT = 255;

parser DistCacheParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                       inout standard_metadata_t std) {
    state start {
        transition select(std.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }
    state parse_packet_out {
        pkt.extract(hdr.packet_out);
        transition parse_ethernet;
    }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (5, 0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(pkt.lookahead<bit<24>>()) {
            DC_MAGIC ++ DC_VERSION: parse_distcache;
            default: accept;
        }
    }
    state parse_distcache {
        pkt.extract(hdr.dc);
        meta.key_left = hdr.dc.key_len;
        meta.value_left = hdr.dc.value_len[15:0];
        /* A key of 1 to 32 bytes (masks: below 32, or 32) without a MAC tag. */
        transition select(hdr.dc.flags & DC_FLAG_AUTH, hdr.dc.key_len) {
            (0, 0 &&& 0xFFE0): parse_key;
            (0, 32):           parse_key;
            default:           accept;
        }
    }
    state parse_key {
        meta.cacheable = 1;
        transition key_loop;
    }
    state key_loop {
        transition select(meta.key_left) {
            0:            value_start;
            0 &&& 0xFFF8: key_tail; /* 1 to 7 bytes left */
            default:      key_word;
        }
    }
    state key_word {
        pkt.extract(hdr.key_words.next);
        meta.key_left = meta.key_left - 8;
        transition key_loop;
    }
    state key_tail {
        pkt.extract(hdr.key_tail.next);
        meta.key_left = meta.key_left - 1;
        transition key_loop;
    }
    /* Only an UPDATE or FETCH_REPLY carries a value the switch stores:
     * whole (unfragmented) and of at most 128 bytes. */
    state value_start {
        transition select(hdr.dc.op, hdr.dc.flags & DC_FLAG_FRAGMENTED, hdr.dc.value_len) {
            (DC_OP_UPDATE,      0, 0 &&& 0xFFFFFF80): parse_value;
            (DC_OP_UPDATE,      0, 128):              parse_value;
            (DC_OP_FETCH_REPLY, 0, 0 &&& 0xFFFFFF80): parse_value;
            (DC_OP_FETCH_REPLY, 0, 128):              parse_value;
            default:                                  accept;
        }
    }
    state parse_value {
        meta.value_fits = 1;
        transition value_loop;
    }
    state value_loop {
        transition select(meta.value_left) {
            0:            accept;
            0 &&& 0xFFF8: value_tail;
            default:      value_word;
        }
    }
    state value_word {
        pkt.extract(hdr.value_words.next);
        meta.value_left = meta.value_left - 8;
        transition value_loop;
    }
    state value_tail {
        pkt.extract(hdr.value_tail.next);
        meta.value_left = meta.value_left - 1;
        transition value_loop;
    }
}

control DistCacheVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

/* Replies and forwarded misses have new addresses and lengths: the IPv4
 * checksum is computed again, and the UDP checksum is left 0 (none). */
control DistCacheComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset,
              hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control DistCacheDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.dc);
        pkt.emit(hdr.key_words);
        pkt.emit(hdr.key_tail);
        pkt.emit(hdr.value_words);
        pkt.emit(hdr.value_tail);
    }
}

#endif /* DISTCACHE_V1MODEL_PARSER_P4 */
