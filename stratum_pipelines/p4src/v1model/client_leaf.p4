/*
 * The client leaf (v1model, for stratum-bmv2): the client ToR of
 * DistCache §4.2, which sends each read to the less loaded of the key's
 * two cache switches (power-of-two-choices) and learns their loads from
 * the telemetry of the replies it carries back to its clients.
 *
 * A client sends a GET to the leaf's read port of the key's storage shard.
 * The key's candidates are its spine, found by the 64 high bits of the key
 * digest (spine_owner: the arcs of the spine layer's ring as ranges), and
 * the storage leaf of the shard's rack (shard_leaf). The leaf rewrites the
 * destination to the chosen switch's read port of the shard (its base
 * port + 1 + shard) and forwards it. Replies on their way to a client
 * that carry FLAG_TELEMETRY update member_load. Everything else is
 * forwarded by IPv4.
 *
 * Build: p4c --target bmv2 --arch v1model --p4runtime-files client_leaf.p4info.txt client_leaf.p4
 */
#include <core.p4>
#include <v1model.p4>
#include "parser.p4"
#include "forward.p4"
#include "../include/params.p4"

/* Member ids the load register holds (ids are taken modulo its size). */
const bit<32> LOAD_MEMBERS = 1024;

control ClientLeafIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    Ipv4Forward() forward;

    @id(0x16000101) @name(".member_load") register<bit<32>>(LOAD_MEMBERS) member_load;
    @id(0x12000101) @name(".choices") counter(2, CounterType.packets) choices; /* [0] spine, [1] leaf */

    bit<32> spine_id;
    bit<32> spine_addr;
    bit<16> spine_port;
    bit<32> leaf_id;
    bit<32> leaf_addr;
    bit<16> leaf_port;
    bool has_spine = false;
    bool has_leaf = false;

    @id(0x01000101) @name(".read_port") action read_port(bit<32> shard) {
        meta.role = ROLE_READS;
        meta.shard = shard;
    }
    @id(0x01000102) @name(".not_a_read_port") action not_a_read_port() { meta.role = ROLE_NONE; }
    @id(0x02000101) @name(".client_read_port") table client_read_port {
        key = {
            hdr.ipv4.dst_addr: exact @id(1) @name("ipv4_dst");
            hdr.udp.dst_port:  exact @id(2) @name("udp_dst_port");
        }
        actions = { read_port; @defaultonly not_a_read_port; }
        default_action = not_a_read_port();
        size = SHARD_ENTRIES;
    }

    @id(0x01000103) @name(".spine") action spine(bit<32> id, bit<32> addr, bit<16> base_port) {
        spine_id = id;
        spine_addr = addr;
        spine_port = base_port + 1 + meta.shard[15:0];
        has_spine = true;
    }
    @id(0x01000104) @name(".no_spine") action no_spine() { has_spine = false; }
    @id(0x02000102) @name(".spine_owner") table spine_owner {
        key = { hdr.dc.key_digest[127:64]: range @id(1) @name("key_point"); }
        actions = { spine; @defaultonly no_spine; }
        default_action = no_spine();
        size = 4096;
    }

    @id(0x01000105) @name(".leaf") action leaf(bit<32> id, bit<32> addr, bit<16> base_port) {
        leaf_id = id;
        leaf_addr = addr;
        leaf_port = base_port + 1 + meta.shard[15:0];
        has_leaf = true;
    }
    @id(0x01000106) @name(".no_leaf") action no_leaf() { has_leaf = false; }
    @id(0x02000103) @name(".shard_leaf") table shard_leaf {
        key = { meta.shard: exact @id(1) @name("shard"); }
        actions = { leaf; @defaultonly no_leaf; }
        default_action = no_leaf();
        size = SHARD_ENTRIES;
    }

    apply {
        if (hdr.packet_out.isValid()) {
            hdr.packet_out.setInvalid();
        } else if (hdr.dc.isValid() && hdr.dc.op == DC_OP_GET_REPLY
                   && (hdr.dc.flags & DC_FLAG_TELEMETRY) != 0) {
            member_load.write(hdr.dc.node_id & (LOAD_MEMBERS - 1), hdr.dc.node_load);
        } else if (hdr.dc.isValid() && hdr.dc.op == DC_OP_GET) {
            client_read_port.apply();
            if (meta.role == ROLE_READS) {
                spine_owner.apply();
                shard_leaf.apply();
                bool to_leaf = has_leaf;
                if (has_spine && has_leaf) {
                    bit<32> s; bit<32> l;
                    member_load.read(s, spine_id & (LOAD_MEMBERS - 1));
                    member_load.read(l, leaf_id & (LOAD_MEMBERS - 1));
                    to_leaf = l < s;
                }
                if (to_leaf) {
                    choices.count(1);
                    hdr.ipv4.dst_addr = leaf_addr;
                    hdr.udp.dst_port = leaf_port;
                    hdr.udp.checksum = 0;
                } else if (has_spine) {
                    choices.count(0);
                    hdr.ipv4.dst_addr = spine_addr;
                    hdr.udp.dst_port = spine_port;
                    hdr.udp.checksum = 0;
                }
            }
        }
        forward.apply(hdr, std);
    }
}

control ClientLeafEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    apply { }
}

V1Switch(DistCacheParser(), DistCacheVerifyChecksum(), ClientLeafIngress(),
         ClientLeafEgress(), DistCacheComputeChecksum(), DistCacheDeparser()) main;
