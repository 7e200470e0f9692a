/*
 * The client leaf for TNA (Tofino): the client ToR of DistCache §4.2, as
 * the v1model program (../v1model/client_leaf.p4, whose comment describes
 * it) with the same tables, actions, register and counter under the same
 * ids and names, and one more register.
 *
 * A GET compares the loads of its two candidates, two cells of the load
 * register, and Tofino reads a register once per pass: the loads are
 * kept twice, member_load (read for the spine) and member_load_copy (read
 * for the storage leaf), and a reply's telemetry writes both.
 *
 * Not compiled on the project's machines (no bf-p4c); on a workstation
 * with Intel's SDE (README.md):
 *   bf-p4c --arch tna --std p4-16 --p4runtime-files client_leaf.p4info.txt client_leaf.p4
 */
#include <core.p4>
#include <tna.p4>
#include "parser.p4"
#include "forward.p4"
#include "../include/params.p4"

/* Member ids the load registers hold (ids are taken modulo their size). */
const bit<32> LOAD_MEMBERS = 1024;

control ClientLeafIngress(inout headers_t hdr, inout ingress_metadata_t ig_md,
                          in ingress_intrinsic_metadata_t ig_intr_md,
                          in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                          inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                          inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    Ipv4Forward() forward;

    @id(0x16000101) @name(".member_load") Register<bit<32>, bit<32>>(LOAD_MEMBERS) member_load;
    @id(0x16000102) @name(".member_load_copy") Register<bit<32>, bit<32>>(LOAD_MEMBERS) member_load_copy;
    @id(0x12000101) @name(".choices") Counter<bit<64>, bit<32>>(2, CounterType_t.PACKETS) choices; /* [0] spine, [1] leaf */

    RegisterAction<bit<32>, bit<32>, bit<32>>(member_load) write_load = {
        void apply(inout bit<32> value) { value = hdr.dc.node_load; }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(member_load_copy) write_load_copy = {
        void apply(inout bit<32> value) { value = hdr.dc.node_load; }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(member_load) read_load = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(member_load_copy) read_load_copy = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };

    bit<32> spine_id;
    bit<32> spine_addr;
    bit<16> spine_port;
    bit<32> leaf_id;
    bit<32> leaf_addr;
    bit<16> leaf_port;
    bool has_spine = false;
    bool has_leaf = false;

    @id(0x01000101) @name(".read_port") action read_port(bit<32> shard) {
        ig_md.dc.role = ROLE_READS;
        ig_md.dc.shard = shard;
    }
    @id(0x01000102) @name(".not_a_read_port") action not_a_read_port() { ig_md.dc.role = ROLE_NONE; }
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
        spine_port = base_port + 1 + ig_md.dc.shard[15:0];
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
        leaf_port = base_port + 1 + ig_md.dc.shard[15:0];
        has_leaf = true;
    }
    @id(0x01000106) @name(".no_leaf") action no_leaf() { has_leaf = false; }
    @id(0x02000103) @name(".shard_leaf") table shard_leaf {
        key = { ig_md.dc.shard: exact @id(1) @name("shard"); }
        actions = { leaf; @defaultonly no_leaf; }
        default_action = no_leaf();
        size = SHARD_ENTRIES;
    }

    apply {
        if (hdr.packet_out.isValid()) {
            hdr.packet_out.setInvalid();
        } else if (hdr.dc.isValid() && hdr.dc.op == DC_OP_GET_REPLY
                   && (hdr.dc.flags & DC_FLAG_TELEMETRY) != 0) {
            bit<32> member = hdr.dc.node_id & (LOAD_MEMBERS - 1);
            write_load.execute(member);
            write_load_copy.execute(member);
        } else if (hdr.dc.isValid() && hdr.dc.op == DC_OP_GET) {
            client_read_port.apply();
            if (ig_md.dc.role == ROLE_READS) {
                spine_owner.apply();
                shard_leaf.apply();
                bool to_leaf = has_leaf;
                if (has_spine && has_leaf) {
                    bit<32> s = read_load.execute(spine_id & (LOAD_MEMBERS - 1));
                    bit<32> l = read_load_copy.execute(leaf_id & (LOAD_MEMBERS - 1));
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
        forward.apply(hdr, ig_tm_md, ig_dprsr_md);
    }
}

Pipeline(DistCacheIngressParser(), ClientLeafIngress(), DistCacheIngressDeparser(),
         DistCacheEgressParser(), DistCacheEgress(), DistCacheEgressDeparser()) pipe;

Switch(pipe) main;
