/*
 * The cache switch (v1model, for stratum-bmv2): the program of the spine
 * and storage-leaf roles of DistCache §4.1. Both roles run it; they differ
 * in what the controller installs — a storage leaf fronts the shards of
 * its rack, a spine every shard — and in the member id (identity).
 *
 * Build (on a workstation with p4c; see README.md):
 *   p4c --target bmv2 --arch v1model --p4runtime-files cache_switch.p4info.txt cache_switch.p4
 */
#include <core.p4>
#include <v1model.p4>
#include "parser.p4"
#include "cache.p4"
#include "forward.p4"

control CacheSwitchIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    DistCacheCache() cache;
    Ipv4Forward() forward;
    apply {
        if (hdr.packet_out.isValid()) {
            /* The controller's FETCH, sent from the coherence address. */
            hdr.packet_out.setInvalid();
            forward.apply(hdr, std);
        } else {
            if (hdr.dc.isValid()) {
                cache.apply(hdr, meta, std);
            }
            if (meta.drop == 1) {
                mark_to_drop(std);
            } else if (meta.to_cpu == 1) {
                std.egress_spec = CPU_PORT;
                hdr.packet_in.setValid();
                hdr.packet_in.ingress_port = std.ingress_port;
            } else if (meta.reply == 1) {
                std.egress_spec = std.ingress_port;
            } else {
                forward.apply(hdr, std);
            }
        }
    }
}

control CacheSwitchEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    apply { }
}

V1Switch(DistCacheParser(), DistCacheVerifyChecksum(), CacheSwitchIngress(),
         CacheSwitchEgress(), DistCacheComputeChecksum(), DistCacheDeparser()) main;
