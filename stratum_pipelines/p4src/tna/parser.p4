/*
 * The TNA (Tofino) parsers and deparsers of the cache pipelines: they
 * accept what the v1model parser (../v1model/parser.p4) accepts, parsed
 * without loops.
 *
 * Tofino's parser takes no loop over a length known only at run time, so
 * the key and the value are parsed by fixed states: the whole 8-byte words
 * (key_len[5:3], value_len[7:3]) one state per word index, each state
 * deciding from the length whether another word follows, then one state
 * per tail length (key_len[2:0], value_len[2:0]) extracting that many
 * 1-byte headers. What the v1model parser accepts, and into which stack
 * entries, is the same: a key of 1 to DC_SWITCH_MAX_KEY_LEN bytes without
 * a MAC tag (meta.cacheable), the value of an unfragmented UPDATE or
 * FETCH_REPLY of at most DC_SWITCH_MAX_VALUE_LEN bytes (meta.value_fits).
 *
 * The egress pipe changes nothing: its parser takes only the intrinsic
 * metadata, so the packet leaves as ingress deparsed it.
 */
#ifndef DISTCACHE_TNA_PARSER_P4
#define DISTCACHE_TNA_PARSER_P4

#include <core.p4>
#include <tna.p4>
#include "../include/types.p4"

/*
 * The port the controller's packet-out arrives on and packet-in leaves
 * by: Tofino's PCIe CPU port, 192 on a two-pipe Tofino such as the
 * Wedge100BF-32X's (320 on a four-pipe one). Stratum maps its CPU port to
 * this device port; change it with the box.
 */
const PortId_t CPU_PORT = 192;

/* What a resubmitted packet carries into its second pass (64 bits, the
 * size of Tofino's resubmit data). */
const bit<8> RESUBMIT_NONE = 0;
const bit<8> RESUBMIT_FILL = 1; /* a FETCH_REPLY that passed its checks: write it */

header resubmit_h {
    bit<8>  kind;
    bit<56> pad;
}

/* Ingress metadata: the pipelines' metadata_t and what TNA adds. */
struct ingress_metadata_t {
    metadata_t dc;
    resubmit_h resubmit;
}

struct egress_metadata_t {
}

struct egress_headers_t {
}

parser DistCacheIngressParser(packet_in pkt, out headers_t hdr, out ingress_metadata_t ig_md,
                              out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pkt.extract(ig_intr_md);
        /* What the controls test before they set it: zero, as v1model's
         * metadata starts. */
        ig_md.dc.role = ROLE_NONE;
        ig_md.dc.cacheable = 0;
        ig_md.dc.value_fits = 0;
        ig_md.dc.drop = 0;
        ig_md.dc.reply = 0;
        ig_md.dc.to_cpu = 0;
        transition select(ig_intr_md.resubmit_flag) {
            1: parse_resubmit;
            default: parse_port_metadata;
        }
    }
    /* The resubmit data takes the place of the port metadata. */
    state parse_resubmit {
        pkt.extract(ig_md.resubmit);
        transition parse_cpu;
    }
    state parse_port_metadata {
        pkt.advance(PORT_METADATA_SIZE);
        transition parse_cpu;
    }
    state parse_cpu {
        transition select(ig_intr_md.ingress_port) {
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
        /* A key of 1 to 32 bytes (masks: below 32, or 32) without a MAC
         * tag, as the v1model parser selects it; the flag is matched by
         * mask, not computed (the parser selects on extracted fields). */
        transition select(hdr.dc.flags, hdr.dc.key_len) {
            (0 &&& DC_FLAG_AUTH, 0 &&& 0xFFE0): parse_key;
            (0 &&& DC_FLAG_AUTH, 32):           parse_key;
            default:                            accept;
        }
    }
    state parse_key {
        ig_md.dc.cacheable = 1;
        transition select(hdr.dc.key_len[5:3]) {
            0: key_tail;
            default: key_word_0;
        }
    }
    /* key_word_i extracts word i; key_len[5:3] words in all (1 to 4). */
    state key_word_0 {
        pkt.extract(hdr.key_words[0]);
        transition select(hdr.dc.key_len[5:3]) {
            1: key_tail;
            default: key_word_1;
        }
    }
    state key_word_1 {
        pkt.extract(hdr.key_words[1]);
        transition select(hdr.dc.key_len[5:3]) {
            2: key_tail;
            default: key_word_2;
        }
    }
    state key_word_2 {
        pkt.extract(hdr.key_words[2]);
        transition select(hdr.dc.key_len[5:3]) {
            3: key_tail;
            default: key_word_3;
        }
    }
    state key_word_3 {
        pkt.extract(hdr.key_words[3]);
        transition value_start; /* 32 bytes: no tail */
    }
    state key_tail {
        transition select(hdr.dc.key_len[2:0]) {
            1: key_tail_1;
            2: key_tail_2;
            3: key_tail_3;
            4: key_tail_4;
            5: key_tail_5;
            6: key_tail_6;
            7: key_tail_7;
            default: value_start;
        }
    }
    state key_tail_1 { pkt.extract(hdr.key_tail[0]); transition value_start; }
    state key_tail_2 { pkt.extract(hdr.key_tail[0]); pkt.extract(hdr.key_tail[1]); transition value_start; }
    state key_tail_3 { pkt.extract(hdr.key_tail[0]); pkt.extract(hdr.key_tail[1]); pkt.extract(hdr.key_tail[2]);
                       transition value_start; }
    state key_tail_4 { pkt.extract(hdr.key_tail[0]); pkt.extract(hdr.key_tail[1]); pkt.extract(hdr.key_tail[2]);
                       pkt.extract(hdr.key_tail[3]); transition value_start; }
    state key_tail_5 { pkt.extract(hdr.key_tail[0]); pkt.extract(hdr.key_tail[1]); pkt.extract(hdr.key_tail[2]);
                       pkt.extract(hdr.key_tail[3]); pkt.extract(hdr.key_tail[4]); transition value_start; }
    state key_tail_6 { pkt.extract(hdr.key_tail[0]); pkt.extract(hdr.key_tail[1]); pkt.extract(hdr.key_tail[2]);
                       pkt.extract(hdr.key_tail[3]); pkt.extract(hdr.key_tail[4]); pkt.extract(hdr.key_tail[5]);
                       transition value_start; }
    state key_tail_7 { pkt.extract(hdr.key_tail[0]); pkt.extract(hdr.key_tail[1]); pkt.extract(hdr.key_tail[2]);
                       pkt.extract(hdr.key_tail[3]); pkt.extract(hdr.key_tail[4]); pkt.extract(hdr.key_tail[5]);
                       pkt.extract(hdr.key_tail[6]); transition value_start; }

    /* Only an UPDATE or FETCH_REPLY carries a value the switch stores:
     * whole (unfragmented) and of at most 128 bytes. */
    state value_start {
        transition select(hdr.dc.op, hdr.dc.flags, hdr.dc.value_len) {
            (DC_OP_UPDATE,      0 &&& DC_FLAG_FRAGMENTED, 0 &&& 0xFFFFFF80): parse_value;
            (DC_OP_UPDATE,      0 &&& DC_FLAG_FRAGMENTED, 128):              parse_value;
            (DC_OP_FETCH_REPLY, 0 &&& DC_FLAG_FRAGMENTED, 0 &&& 0xFFFFFF80): parse_value;
            (DC_OP_FETCH_REPLY, 0 &&& DC_FLAG_FRAGMENTED, 128):              parse_value;
            default:                                                         accept;
        }
    }
    state parse_value {
        ig_md.dc.value_fits = 1;
        transition select(hdr.dc.value_len[7:3]) {
            0: value_tail;
            default: value_word_0;
        }
    }
/* value_word_i extracts word i; value_len[7:3] words in all (1 to 16). */
#define VALUE_WORD_STATE(i, next) \
    state value_word_##i { \
        pkt.extract(hdr.value_words[i]); \
        transition select(hdr.dc.value_len[7:3]) { \
            i + 1: value_tail; \
            default: next; \
        } \
    }
    VALUE_WORD_STATE(0, value_word_1)
    VALUE_WORD_STATE(1, value_word_2)
    VALUE_WORD_STATE(2, value_word_3)
    VALUE_WORD_STATE(3, value_word_4)
    VALUE_WORD_STATE(4, value_word_5)
    VALUE_WORD_STATE(5, value_word_6)
    VALUE_WORD_STATE(6, value_word_7)
    VALUE_WORD_STATE(7, value_word_8)
    VALUE_WORD_STATE(8, value_word_9)
    VALUE_WORD_STATE(9, value_word_10)
    VALUE_WORD_STATE(10, value_word_11)
    VALUE_WORD_STATE(11, value_word_12)
    VALUE_WORD_STATE(12, value_word_13)
    VALUE_WORD_STATE(13, value_word_14)
    VALUE_WORD_STATE(14, value_word_15)
    state value_word_15 {
        pkt.extract(hdr.value_words[15]);
        transition accept; /* 128 bytes: no tail */
    }
    state value_tail {
        transition select(hdr.dc.value_len[2:0]) {
            1: value_tail_1;
            2: value_tail_2;
            3: value_tail_3;
            4: value_tail_4;
            5: value_tail_5;
            6: value_tail_6;
            7: value_tail_7;
            default: accept;
        }
    }
    state value_tail_1 { pkt.extract(hdr.value_tail[0]); transition accept; }
    state value_tail_2 { pkt.extract(hdr.value_tail[0]); pkt.extract(hdr.value_tail[1]); transition accept; }
    state value_tail_3 { pkt.extract(hdr.value_tail[0]); pkt.extract(hdr.value_tail[1]); pkt.extract(hdr.value_tail[2]);
                         transition accept; }
    state value_tail_4 { pkt.extract(hdr.value_tail[0]); pkt.extract(hdr.value_tail[1]); pkt.extract(hdr.value_tail[2]);
                         pkt.extract(hdr.value_tail[3]); transition accept; }
    state value_tail_5 { pkt.extract(hdr.value_tail[0]); pkt.extract(hdr.value_tail[1]); pkt.extract(hdr.value_tail[2]);
                         pkt.extract(hdr.value_tail[3]); pkt.extract(hdr.value_tail[4]); transition accept; }
    state value_tail_6 { pkt.extract(hdr.value_tail[0]); pkt.extract(hdr.value_tail[1]); pkt.extract(hdr.value_tail[2]);
                         pkt.extract(hdr.value_tail[3]); pkt.extract(hdr.value_tail[4]); pkt.extract(hdr.value_tail[5]);
                         transition accept; }
    state value_tail_7 { pkt.extract(hdr.value_tail[0]); pkt.extract(hdr.value_tail[1]); pkt.extract(hdr.value_tail[2]);
                         pkt.extract(hdr.value_tail[3]); pkt.extract(hdr.value_tail[4]); pkt.extract(hdr.value_tail[5]);
                         pkt.extract(hdr.value_tail[6]); transition accept; }
}

/* The IPv4 checksum computed again: replies and relayed reads have new
 * addresses and lengths (the UDP checksum is left 0, none). */
#define IPV4_CHECKSUM(csum) \
    if (hdr.ipv4.isValid()) { \
        hdr.ipv4.hdr_checksum = csum.update({ \
            hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len, \
            hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, \
            hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr }); \
    }

/* The ingress deparser of a program that sends no digest and resubmits
 * nothing (the client leaf): the checksum, then the headers in the order
 * of headers_t (packet_out is invalid by then). */
control DistCacheIngressDeparser(packet_out pkt, inout headers_t hdr, in ingress_metadata_t ig_md,
                                 in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Checksum() ipv4_checksum;
    apply {
        IPV4_CHECKSUM(ipv4_checksum)
        pkt.emit(hdr);
    }
}

parser DistCacheEgressParser(packet_in pkt, out egress_headers_t eg_hdr, out egress_metadata_t eg_md,
                             out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        transition accept;
    }
}

control DistCacheEgress(inout egress_headers_t eg_hdr, inout egress_metadata_t eg_md,
                        in egress_intrinsic_metadata_t eg_intr_md,
                        in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                        inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                        inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    apply { }
}

control DistCacheEgressDeparser(packet_out pkt, inout egress_headers_t eg_hdr, in egress_metadata_t eg_md,
                                in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    apply {
        pkt.emit(eg_hdr);
    }
}

#endif /* DISTCACHE_TNA_PARSER_P4 */
