/*
 * IPv4 forwarding (TNA): the v1model Ipv4Forward (../v1model/forward.p4)
 * with Tofino's intrinsic metadata — the egress port is the traffic
 * manager's ucast_egress_port, a drop the deparser's drop_ctl. Same
 * table, actions, ids and names.
 */
#ifndef DISTCACHE_TNA_FORWARD_P4
#define DISTCACHE_TNA_FORWARD_P4

#include <core.p4>
#include <tna.p4>
#include "../include/types.p4"

control Ipv4Forward(inout headers_t hdr, inout ingress_intrinsic_metadata_for_tm_t ig_tm_md,
                    inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    @id(0x01000020) @name(".route") action route(bit<9> port, mac_addr_t src_mac, mac_addr_t dst_mac) {
        ig_tm_md.ucast_egress_port = port;
        hdr.ethernet.src_addr = src_mac;
        hdr.ethernet.dst_addr = dst_mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    @id(0x01000021) @name(".drop") action drop() { ig_dprsr_md.drop_ctl = 1; }
    @id(0x02000020) @name(".ipv4_route") table ipv4_route {
        key = { hdr.ipv4.dst_addr: lpm @id(1) @name("ipv4_dst"); }
        actions = { route; drop; }
        default_action = drop();
        size = 1024;
    }
    apply {
        if (hdr.ipv4.isValid() && hdr.ipv4.ttl > 1) {
            ipv4_route.apply();
        } else {
            ig_dprsr_md.drop_ctl = 1;
        }
    }
}

#endif /* DISTCACHE_TNA_FORWARD_P4 */
