/*
 * The cache control of the spine and storage-leaf programs (v1model):
 * DistCache §4 with NetCache's data structures.
 *
 * A switch is addressed like a cache node: the switch_address table names
 * its read ports, one per storage shard it fronts, and its coherence port.
 * - A GET on a read port is looked up by key digest (cache_lookup). A
 *   valid copy, while the serving lease lasts, is a hit: the switch turns
 *   the request into the GET_REPLY, appends the value from the value
 *   registers, stamps its member id and load, and sends it back. Any other
 *   read is a miss, relayed to the shard's shim (storage_route) as a cache
 *   node relays it: the switch sends it from its read port under a
 *   sequence number of its own, remembered with the client's address and
 *   sequence number in the relay registers, and turns the shim's reply
 *   back into the reply to the client (the client's retransmits and MORE
 *   reuse the slot, so the shim sees one request). Uncached
 *   keys are counted in a Count-Min sketch; one that crosses the threshold
 *   and that the Bloom filter has not seen is reported in a hot_key_t
 *   digest (NetCache §4.3).
 * - Two-phase coherence (DistCache §4.3) on the coherence port:
 *   INVALIDATE clears the valid bit and raises the slot's version;
 *   UPDATE writes the value and sets the valid bit iff the slot's version
 *   is the write's; FETCH_REPLY, the answer to the controller's FETCH,
 *   fills an invalid slot iff it answers the FETCH the slot waits for
 *   (fill_seq) and its version is not older. Packets write values, never
 *   the controller. INVALIDATE and UPDATE are acknowledged to the shim
 *   (FLAG_HIT on the acknowledgement of an INVALIDATE of a held key);
 *   FETCH_REPLY goes on to the controller. A PING is answered with a
 *   PONG, as a cache node answers the control loop's probe.
 * - Fencing: the controller renews lease_until in the switch's clock
 *   (clock is the last packet's timestamp) after it applied the current
 *   partition map to the lookup table; a switch cut off from its
 *   controller stops serving hits when the lease runs out, and a switch
 *   that restarts has no valid bit set and no lease.
 */
#ifndef DISTCACHE_V1MODEL_CACHE_P4
#define DISTCACHE_V1MODEL_CACHE_P4

#include <core.p4>
#include <v1model.p4>
#include "../include/types.p4"
#include "../include/params.p4"

#define SLOT_WORD(i) ((meta.slot << 4) + (i))

/* A hit's value: the words, then the tail bytes from the next word. */
#define READ_WORD(i) if (meta.words > i) { hdr.value_words[i].setValid(); value_words.read(hdr.value_words[i].w, SLOT_WORD(i)); }
#define READ_TAIL(j) if (meta.tail > j) { hdr.value_tail[j].setValid(); hdr.value_tail[j].b = meta.tail_word[63 - 8 * j : 56 - 8 * j]; }
/* An UPDATE's or FETCH_REPLY's value into the slot's words. */
#define WRITE_WORD(i) if (hdr.value_words[i].isValid()) { value_words.write(SLOT_WORD(i), hdr.value_words[i].w); }
#define WRITE_TAIL(j) if (hdr.value_tail[j].isValid()) { meta.tail_word[63 - 8 * j : 56 - 8 * j] = hdr.value_tail[j].b; }

control DistCacheCache(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {
    bit<48> now; /* this packet's ingress timestamp */
    @id(0x16000001) @name(".value_words") register<bit<64>>(VALUE_WORDS) value_words;
    @id(0x16000002) @name(".value_len")   register<bit<8>>(CACHE_SLOTS)  value_len;
    @id(0x16000003) @name(".valid")       register<bit<1>>(CACHE_SLOTS)  valid;
    @id(0x16000004) @name(".version")     register<bit<64>>(CACHE_SLOTS) version;
    @id(0x16000005) @name(".fill_seq")    register<bit<64>>(CACHE_SLOTS) fill_seq;
    @id(0x16000006) @name(".lease_until") register<bit<48>>(1) lease_until;
    @id(0x16000007) @name(".clock")       register<bit<48>>(1) clock;
    @id(0x16000008) @name(".load")        register<bit<32>>(2) load; /* [0] this window, [1] the last */
    @id(0x16000009) @name(".load_window_start") register<bit<48>>(1) load_window_start;
    @id(0x1600000a) @name(".sketch_row0") register<bit<16>>(SKETCH_WIDTH) sketch_row0;
    @id(0x1600000b) @name(".sketch_row1") register<bit<16>>(SKETCH_WIDTH) sketch_row1;
    @id(0x1600000c) @name(".sketch_row2") register<bit<16>>(SKETCH_WIDTH) sketch_row2;
    @id(0x1600000d) @name(".sketch_row3") register<bit<16>>(SKETCH_WIDTH) sketch_row3;
    @id(0x1600000e) @name(".bloom0")      register<bit<1>>(BLOOM_BITS) bloom0;
    @id(0x1600000f) @name(".bloom1")      register<bit<1>>(BLOOM_BITS) bloom1;
    @id(0x16000010) @name(".bloom2")      register<bit<1>>(BLOOM_BITS) bloom2;
    @id(0x16000011) @name(".hot_threshold") register<bit<16>>(1) hot_threshold;
    @id(0x16000012) @name(".relay_client_addr") register<bit<32>>(RELAY_SLOTS) relay_client_addr;
    @id(0x16000013) @name(".relay_client_port") register<bit<16>>(RELAY_SLOTS) relay_client_port;
    @id(0x16000014) @name(".relay_client_seq")  register<bit<64>>(RELAY_SLOTS) relay_client_seq;
    @id(0x16000015) @name(".relay_seq")         register<bit<64>>(RELAY_SLOTS) relay_seq;
    @id(0x16000016) @name(".relay_next")        register<bit<48>>(1) relay_next;

    @id(0x12000001) @name(".cache_hits") counter(CACHE_SLOTS, CounterType.packets) cache_hits;
    @id(0x12000002) @name(".datagrams")  counter(256, CounterType.packets_and_bytes) datagrams;

    @id(0x01000001) @name(".not_addressed") action not_addressed() { meta.role = ROLE_NONE; }
    @id(0x01000002) @name(".serve_reads") action serve_reads(bit<32> shard) {
        meta.role = ROLE_READS;
        meta.shard = shard;
    }
    @id(0x01000003) @name(".serve_coherence") action serve_coherence() { meta.role = ROLE_COHERENCE; }
    @id(0x02000001) @name(".switch_address") table switch_address {
        key = {
            hdr.ipv4.dst_addr: exact @id(1) @name("ipv4_dst");
            hdr.udp.dst_port:  exact @id(2) @name("udp_dst_port");
        }
        actions = { serve_reads; serve_coherence; @defaultonly not_addressed; }
        default_action = not_addressed();
        size = SHARD_ENTRIES;
    }

    @id(0x01000004) @name(".set_identity") action set_identity(bit<32> node_id, bit<64> map_version) {
        meta.node_id = node_id;
        meta.map_version = map_version;
    }
    @id(0x02000002) @name(".identity") table identity {
        actions = { set_identity; }
        default_action = set_identity(0, 0);
        size = 1;
    }

    @id(0x01000005) @name(".to_shim") action to_shim(bit<32> addr, bit<16> port) {
        meta.shim_addr = addr;
        meta.shim_port = port;
    }
    @id(0x01000006) @name(".no_shim") action no_shim() { meta.drop = 1; }
    @id(0x02000003) @name(".storage_route") table storage_route {
        key = { meta.shard: exact @id(1) @name("shard"); }
        actions = { to_shim; @defaultonly no_shim; }
        default_action = no_shim();
        size = SHARD_ENTRIES;
    }

    @id(0x01000007) @name(".cached") action cached(bit<32> slot) { meta.slot = slot; }
    @id(0x01000008) @name(".uncached") action uncached() { }
    @id(0x02000004) @name(".cache_lookup") table cache_lookup {
        key = { hdr.dc.key_digest: exact @id(1) @name("key_digest"); }
        actions = { cached; @defaultonly uncached; }
        default_action = uncached();
        size = CACHE_SLOTS;
    }

    /* The packet goes back where it came from, as the receiver's answer. */
    action reflect(bit<8> op) {
        mac_addr_t mac = hdr.ethernet.dst_addr;
        hdr.ethernet.dst_addr = hdr.ethernet.src_addr;
        hdr.ethernet.src_addr = mac;
        ipv4_addr_t addr = hdr.ipv4.dst_addr;
        hdr.ipv4.dst_addr = hdr.ipv4.src_addr;
        hdr.ipv4.src_addr = addr;
        hdr.ipv4.ttl = 64;
        bit<16> port = hdr.udp.dst_port;
        hdr.udp.dst_port = hdr.udp.src_port;
        hdr.udp.src_port = port;
        hdr.udp.checksum = 0;
        hdr.dc.op = op;
        hdr.dc.status = DC_STATUS_OK;
        meta.reply = 1;
    }

    /* The datagram is the fixed header, the key and value bytes of a value. */
    action set_lengths(bit<16> value_bytes) {
        hdr.udp.length = 8 + 64 + hdr.dc.key_len + value_bytes;
        hdr.ipv4.total_len = 20 + 8 + 64 + hdr.dc.key_len + value_bytes;
    }

    action stamp() {
        hdr.dc.flags = hdr.dc.flags | DC_FLAG_TELEMETRY;
        hdr.dc.node_id = meta.node_id;
        hdr.dc.node_load = meta.load;
        hdr.dc.map_version = meta.map_version;
    }

    action drop_value() {
        hdr.value_words[0].setInvalid();  hdr.value_words[1].setInvalid();
        hdr.value_words[2].setInvalid();  hdr.value_words[3].setInvalid();
        hdr.value_words[4].setInvalid();  hdr.value_words[5].setInvalid();
        hdr.value_words[6].setInvalid();  hdr.value_words[7].setInvalid();
        hdr.value_words[8].setInvalid();  hdr.value_words[9].setInvalid();
        hdr.value_words[10].setInvalid(); hdr.value_words[11].setInvalid();
        hdr.value_words[12].setInvalid(); hdr.value_words[13].setInvalid();
        hdr.value_words[14].setInvalid(); hdr.value_words[15].setInvalid();
        hdr.value_tail[0].setInvalid(); hdr.value_tail[1].setInvalid();
        hdr.value_tail[2].setInvalid(); hdr.value_tail[3].setInvalid();
        hdr.value_tail[4].setInvalid(); hdr.value_tail[5].setInvalid();
        hdr.value_tail[6].setInvalid();
        hdr.dc.value_len = 0;
        hdr.dc.frag_offset = 0;
    }

    /* Reads in the current window, and the larger of it and the last
     * window as the load a reply reports (DistCache §4.2). */
    action count_load() {
        bit<48> start;
        bit<32> current;
        bit<32> last;
        load_window_start.read(start, 0);
        load.read(current, 0);
        load.read(last, 1);
        if (now - start >= LOAD_WINDOW) {
            last = current;
            current = 0;
            load_window_start.write(0, now);
            load.write(1, last);
        }
        current = current + 1;
        load.write(0, current);
        meta.load = current > last ? current : last;
    }

    /* The packet leaves by the read port it came in on, to (addr, port). */
    action send_from_read_port(bit<32> addr, bit<16> port) {
        hdr.ipv4.src_addr = hdr.ipv4.dst_addr;
        hdr.udp.src_port = hdr.udp.dst_port;
        hdr.ipv4.dst_addr = addr;
        hdr.udp.dst_port = port;
        hdr.udp.checksum = 0;
    }

    /* The key's words and tail bytes into one left-aligned field: the
     * tail starts after the key's whole words (key_len / 8 of them). */
    action pack_key() {
        meta.key = 0;
        if (hdr.key_words[0].isValid()) { meta.key[255:192] = hdr.key_words[0].w; }
        if (hdr.key_words[1].isValid()) { meta.key[191:128] = hdr.key_words[1].w; }
        if (hdr.key_words[2].isValid()) { meta.key[127:64]  = hdr.key_words[2].w; }
        if (hdr.key_words[3].isValid()) { meta.key[63:0]    = hdr.key_words[3].w; }
        bit<8> tail_at = 248 - (bit<8>)(hdr.dc.key_len >> 3) * 64;
        if (hdr.key_tail[0].isValid()) { meta.key = meta.key | ((bit<256>)hdr.key_tail[0].b << tail_at); }
        if (hdr.key_tail[1].isValid()) { meta.key = meta.key | ((bit<256>)hdr.key_tail[1].b << (tail_at - 8)); }
        if (hdr.key_tail[2].isValid()) { meta.key = meta.key | ((bit<256>)hdr.key_tail[2].b << (tail_at - 16)); }
        if (hdr.key_tail[3].isValid()) { meta.key = meta.key | ((bit<256>)hdr.key_tail[3].b << (tail_at - 24)); }
        if (hdr.key_tail[4].isValid()) { meta.key = meta.key | ((bit<256>)hdr.key_tail[4].b << (tail_at - 32)); }
        if (hdr.key_tail[5].isValid()) { meta.key = meta.key | ((bit<256>)hdr.key_tail[5].b << (tail_at - 40)); }
        if (hdr.key_tail[6].isValid()) { meta.key = meta.key | ((bit<256>)hdr.key_tail[6].b << (tail_at - 48)); }
    }

    /* The load a relayed reply reports, without counting it as a read. */
    action peek_load() {
        bit<32> current;
        bit<32> last;
        load.read(current, 0);
        load.read(last, 1);
        meta.load = current > last ? current : last;
    }

    /* Count-Min (four rows) and Bloom filter (three arrays) of an
     * uncached key, each indexed by its own slice of the key digest. */
    action count_uncached() {
        bit<16> c0; bit<16> c1; bit<16> c2; bit<16> c3;
        sketch_row0.read(c0, (bit<32>)hdr.dc.key_digest[15:0]);
        sketch_row1.read(c1, (bit<32>)hdr.dc.key_digest[31:16]);
        sketch_row2.read(c2, (bit<32>)hdr.dc.key_digest[47:32]);
        sketch_row3.read(c3, (bit<32>)hdr.dc.key_digest[63:48]);
        c0 = c0 |+| 1; c1 = c1 |+| 1; c2 = c2 |+| 1; c3 = c3 |+| 1;
        sketch_row0.write((bit<32>)hdr.dc.key_digest[15:0], c0);
        sketch_row1.write((bit<32>)hdr.dc.key_digest[31:16], c1);
        sketch_row2.write((bit<32>)hdr.dc.key_digest[47:32], c2);
        sketch_row3.write((bit<32>)hdr.dc.key_digest[63:48], c3);
        bit<16> m = c0 < c1 ? c0 : c1;
        m = m < c2 ? m : c2;
        meta.hot_count = m < c3 ? m : c3;
    }

    apply {
        now = std.ingress_global_timestamp;
        clock.write(0, now);
        switch_address.apply();
        if (meta.role != ROLE_NONE) {
            datagrams.count((bit<32>)hdr.dc.op);
            identity.apply();
        }
        bool held = false;
        if (meta.role != ROLE_NONE && meta.cacheable == 1) {
            held = cache_lookup.apply().hit;
        }

        if (meta.role == ROLE_READS) {
            storage_route.apply();
            if (hdr.dc.op == DC_OP_GET) {
                count_load();
            } else {
                peek_load();
            }
            bool hit = false;
            if (hdr.dc.op == DC_OP_GET && held) {
                bit<1> v;
                bit<48> until;
                valid.read(v, meta.slot);
                lease_until.read(until, 0);
                hit = v == 1 && now < until;
            } else if (hdr.dc.op == DC_OP_GET && meta.cacheable == 1) {
                count_uncached();
                bit<16> threshold;
                hot_threshold.read(threshold, 0);
                if (threshold != 0 && meta.hot_count >= threshold) {
                    bit<1> b0; bit<1> b1; bit<1> b2;
                    bloom0.read(b0, (bit<32>)hdr.dc.key_digest[79:64]);
                    bloom1.read(b1, (bit<32>)hdr.dc.key_digest[95:80]);
                    bloom2.read(b2, (bit<32>)hdr.dc.key_digest[111:96]);
                    if ((b0 & b1 & b2) == 0) {
                        bloom0.write((bit<32>)hdr.dc.key_digest[79:64], 1);
                        bloom1.write((bit<32>)hdr.dc.key_digest[95:80], 1);
                        bloom2.write((bit<32>)hdr.dc.key_digest[111:96], 1);
                        pack_key();
                        digest<hot_key_t>(1, { hdr.dc.key_digest, hdr.dc.key_len, meta.key, meta.hot_count });
                    }
                }
            }
            if (hit) {
                cache_hits.count(meta.slot);
                bit<8> len;
                value_len.read(len, meta.slot);
                meta.words = len >> 3;
                meta.tail = len & 7;
                READ_WORD(0)  READ_WORD(1)  READ_WORD(2)  READ_WORD(3)
                READ_WORD(4)  READ_WORD(5)  READ_WORD(6)  READ_WORD(7)
                READ_WORD(8)  READ_WORD(9)  READ_WORD(10) READ_WORD(11)
                READ_WORD(12) READ_WORD(13) READ_WORD(14) READ_WORD(15)
                if (meta.tail != 0) {
                    value_words.read(meta.tail_word, SLOT_WORD((bit<32>)meta.words));
                }
                READ_TAIL(0) READ_TAIL(1) READ_TAIL(2) READ_TAIL(3)
                READ_TAIL(4) READ_TAIL(5) READ_TAIL(6)
                version.read(hdr.dc.value_version, meta.slot);
                hdr.dc.value_len = (bit<32>)len;
                reflect(DC_OP_GET_REPLY);
                hdr.dc.flags = hdr.dc.flags | DC_FLAG_HIT;
                set_lengths((bit<16>)len);
                stamp();
            } else if (hdr.dc.op == DC_OP_GET && (hdr.dc.flags & DC_FLAG_CACHE_ONLY) != 0) {
                /* A hedged read is answered from a copy or refused, never
                 * sent to the shim. */
                reflect(DC_OP_GET_REPLY);
                hdr.dc.status = DC_STATUS_UNAVAILABLE;
                stamp();
            } else if (hdr.dc.op == DC_OP_GET || hdr.dc.op == DC_OP_MORE) {
                /* A miss, or the client asking for the next window of a
                 * relayed reply: to the shim, from the client's slot. */
                bit<32> r;
                hash(r, HashAlgorithm.crc32, (bit<32>)0,
                     { hdr.ipv4.src_addr, hdr.udp.src_port, hdr.dc.seq }, RELAY_SLOTS);
                bit<32> addr; bit<16> port; bit<64> seq; bit<64> relayed;
                relay_client_addr.read(addr, r);
                relay_client_port.read(port, r);
                relay_client_seq.read(seq, r);
                relay_seq.read(relayed, r);
                if (addr != hdr.ipv4.src_addr || port != hdr.udp.src_port || seq != hdr.dc.seq) {
                    if (hdr.dc.op == DC_OP_MORE) {
                        meta.drop = 1; /* the slot went to another read */
                    } else {
                        bit<48> n;
                        relay_next.read(n, 0);
                        n = n + 1;
                        relay_next.write(0, n);
                        relayed = n ++ r[15:0];
                        relay_client_addr.write(r, hdr.ipv4.src_addr);
                        relay_client_port.write(r, hdr.udp.src_port);
                        relay_client_seq.write(r, hdr.dc.seq);
                        relay_seq.write(r, relayed);
                    }
                }
                if (meta.drop == 0) {
                    send_from_read_port(meta.shim_addr, meta.shim_port);
                    hdr.dc.seq = relayed;
                }
            } else if (hdr.dc.op == DC_OP_GET_REPLY) {
                /* The shim's reply to a relayed read, back to its client. */
                bit<32> r = (bit<32>)hdr.dc.seq[15:0];
                bit<64> relayed;
                relay_seq.read(relayed, r);
                if (relayed == hdr.dc.seq && relayed != 0) {
                    bit<32> addr; bit<16> port;
                    relay_client_addr.read(addr, r);
                    relay_client_port.read(port, r);
                    relay_client_seq.read(hdr.dc.seq, r);
                    send_from_read_port(addr, port);
                    stamp();
                } else {
                    meta.drop = 1;
                }
            } else {
                meta.drop = 1;
            }
        } else if (meta.role == ROLE_COHERENCE) {
            bit<64> ver = 0;
            if (held) {
                version.read(ver, meta.slot);
            }
            if (hdr.dc.op == DC_OP_INVALIDATE) {
                if (held) {
                    valid.write(meta.slot, 0);
                    if (hdr.dc.value_version > ver) {
                        version.write(meta.slot, hdr.dc.value_version);
                    }
                }
                reflect(DC_OP_INVALIDATE_ACK);
                hdr.dc.flags = held ? DC_FLAG_HIT : 0;
                stamp();
            } else if (hdr.dc.op == DC_OP_UPDATE || hdr.dc.op == DC_OP_FETCH_REPLY) {
                bit<64> seq = 0;
                bit<1> v = 1;
                if (held) {
                    fill_seq.read(seq, meta.slot);
                    valid.read(v, meta.slot);
                }
                bool apply_update = hdr.dc.op == DC_OP_UPDATE && ver == hdr.dc.value_version;
                bool apply_fill = hdr.dc.op == DC_OP_FETCH_REPLY && v == 0 && seq == hdr.dc.seq
                    && hdr.dc.value_version >= ver;
                if (held && meta.value_fits == 1 && hdr.dc.status == DC_STATUS_OK && (apply_update || apply_fill)) {
                    WRITE_WORD(0)  WRITE_WORD(1)  WRITE_WORD(2)  WRITE_WORD(3)
                    WRITE_WORD(4)  WRITE_WORD(5)  WRITE_WORD(6)  WRITE_WORD(7)
                    WRITE_WORD(8)  WRITE_WORD(9)  WRITE_WORD(10) WRITE_WORD(11)
                    WRITE_WORD(12) WRITE_WORD(13) WRITE_WORD(14) WRITE_WORD(15)
                    meta.tail_word = 0;
                    WRITE_TAIL(0) WRITE_TAIL(1) WRITE_TAIL(2) WRITE_TAIL(3)
                    WRITE_TAIL(4) WRITE_TAIL(5) WRITE_TAIL(6)
                    if (hdr.dc.value_len[2:0] != 0) {
                        value_words.write(SLOT_WORD((bit<32>)hdr.dc.value_len[7:3]), meta.tail_word);
                    }
                    value_len.write(meta.slot, hdr.dc.value_len[7:0]);
                    version.write(meta.slot, hdr.dc.value_version);
                    valid.write(meta.slot, 1);
                }
                if (hdr.dc.op == DC_OP_UPDATE) {
                    /* The acknowledgement carries the key, not the value:
                     * parsed value words are dropped, unparsed bytes cut. */
                    drop_value();
                    truncate((bit<32>)(14 + 20 + 8 + 64) + (bit<32>)hdr.dc.key_len);
                    reflect(DC_OP_UPDATE_ACK);
                    hdr.dc.flags = 0;
                    set_lengths(0);
                    stamp();
                } else {
                    /* The controller learns the fill's outcome from the slot. */
                    meta.to_cpu = 1;
                }
            } else if (hdr.dc.op == DC_OP_PING) {
                /* Liveness: the control loop's probe of the member. */
                reflect(DC_OP_PONG);
                stamp();
            } else {
                meta.drop = 1;
            }
        }
    }
}

#endif /* DISTCACHE_V1MODEL_CACHE_P4 */
