/*
 * IPv4 forwarding (v1model): what every packet the cache does not answer
 * goes through — misses on their way to a shim, replies of shims, and
 * traffic that is not DistCache's.
 */
#ifndef DISTCACHE_V1MODEL_FORWARD_P4
#define DISTCACHE_V1MODEL_FORWARD_P4

#include <core.p4>
#include <v1model.p4>
#include "../include/types.p4"

control Ipv4Forward(inout headers_t hdr, inout standard_metadata_t std) {
    @id(0x01000020) @name(".route") action route(bit<9> port, mac_addr_t src_mac, mac_addr_t dst_mac) {
        std.egress_spec = port;
        hdr.ethernet.src_addr = src_mac;
        hdr.ethernet.dst_addr = dst_mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    @id(0x01000021) @name(".drop") action drop() { mark_to_drop(std); }
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
            mark_to_drop(std);
        }
    }
}

#endif /* DISTCACHE_V1MODEL_FORWARD_P4 */
