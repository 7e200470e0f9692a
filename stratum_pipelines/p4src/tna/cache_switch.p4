/*
 * The cache switch for TNA (Tofino): the program of the spine and
 * storage-leaf roles of DistCache §4.1, as the v1model program
 * (../v1model/cache_switch.p4) with the same tables, actions, registers,
 * counters and digest under the same ids and names, except where
 * Tofino's one access per register per pass splits a register
 * (cache.p4). Both roles run it; they differ in what the controller
 * installs and in the member id (identity).
 *
 * Not compiled on the project's machines (no bf-p4c); on a workstation
 * with Intel's SDE (README.md):
 *   bf-p4c --arch tna --std p4-16 --p4runtime-files cache_switch.p4info.txt cache_switch.p4
 */
#include <core.p4>
#include <tna.p4>
#include "parser.p4"
#include "cache.p4"
#include "forward.p4"

control CacheSwitchIngress(inout headers_t hdr, inout ingress_metadata_t ig_md,
                           in ingress_intrinsic_metadata_t ig_intr_md,
                           in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                           inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                           inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    DistCacheCache() cache;
    Ipv4Forward() forward;
    apply {
        if (hdr.packet_out.isValid()) {
            /* The controller's FETCH, sent from the coherence address. */
            hdr.packet_out.setInvalid();
            forward.apply(hdr, ig_tm_md, ig_dprsr_md);
        } else {
            if (hdr.dc.isValid()) {
                cache.apply(hdr, ig_md.dc, ig_md.resubmit, ig_intr_md, ig_prsr_md, ig_dprsr_md);
            }
            if (ig_dprsr_md.resubmit_type != 0) {
                /* The first pass of a fill: the packet comes back. */
            } else if (ig_md.dc.drop == 1) {
                ig_dprsr_md.drop_ctl = 1;
            } else if (ig_md.dc.to_cpu == 1) {
                ig_tm_md.ucast_egress_port = CPU_PORT;
                hdr.packet_in.setValid();
                hdr.packet_in.ingress_port = ig_intr_md.ingress_port;
                hdr.packet_in.pad = 0;
            } else if (ig_md.dc.reply == 1) {
                ig_tm_md.ucast_egress_port = ig_intr_md.ingress_port;
            } else {
                forward.apply(hdr, ig_tm_md, ig_dprsr_md);
            }
        }
    }
}

/*
 * The ingress deparser: a resubmit (the first pass of a fill that passed
 * its checks), the hot-key digest (digest_type 1), the IPv4 checksum,
 * then the headers in the order of headers_t.
 */
control CacheSwitchIngressDeparser(packet_out pkt, inout headers_t hdr, in ingress_metadata_t ig_md,
                                   in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Checksum() ipv4_checksum;
    Resubmit() resubmit;
    /* Named as the digest's struct, the name the v1model P4Info gives it
     * and the controller looks up. */
    @name(".hot_key_t") Digest<hot_key_t>() hot_key_digest;
    apply {
        IPV4_CHECKSUM(ipv4_checksum)
        if (ig_dprsr_md.resubmit_type == 1) {
            resubmit.emit(ig_md.resubmit);
        }
        if (ig_dprsr_md.digest_type == 1) {
            hot_key_digest.pack({ hdr.dc.key_digest, hdr.dc.key_len, ig_md.dc.key, ig_md.dc.hot_count });
        }
        pkt.emit(hdr);
    }
}

Pipeline(DistCacheIngressParser(), CacheSwitchIngress(), CacheSwitchIngressDeparser(),
         DistCacheEgressParser(), DistCacheEgress(), DistCacheEgressDeparser()) pipe;

Switch(pipe) main;
