/*
 * The cache control of the spine and storage-leaf programs for TNA
 * (Tofino): the logic of the v1model control (../v1model/cache.p4, whose
 * comment describes it), with Tofino's forms and constraints. It is not
 * compiled on the project's machines (no bf-p4c; README.md).
 *
 * Every register is a Register<T, I> accessed through RegisterActions,
 * and a packet executes at most one of them per register per pass. Where
 * the v1model control reads a register and then writes it, or touches
 * two cells of one register, this control is restructured (each place is
 * commented):
 * - value_words: the v1model register holds a slot's sixteen words
 *   side by side (slot * 16 + i) and a hit reads all of them. Here each
 *   word index has its register (value_words_0 … value_words_15, one
 *   cell a slot), so a hit or a write touches each once; word i of a
 *   slot is read either as a whole word or, when i is the value's last
 *   partial word, as the tail word, never both.
 * - load: the v1model register holds this window's reads in cell 0 and
 *   the last window's in cell 1, and a read touches both. Here this
 *   window's count is `load` and the last window's `load_last`.
 * - relay_client_*: instead of reading the client's slot and writing it
 *   when it belongs to another read, a GET swaps the client's address,
 *   port and sequence number in (writing the values a slot already holds
 *   changes nothing), and compares what it swapped out.
 * - bloom: test-and-set in one access (setting an already set bit
 *   changes nothing).
 * - UPDATE: applied iff the slot's version is the write's, so the version
 *   is only read (writing it would write the same value).
 * - FETCH_REPLY: its checks read valid, fill_seq and version, and its
 *   write sets valid and version: two accesses. The first pass checks;
 *   a fill that passes is resubmitted, and the second pass writes the
 *   value iff the version is still not newer than the fill's (an
 *   INVALIDATE of a newer write between the passes stops it). Between
 *   the passes only the version is checked again: the fill behaves as if
 *   applied when it was checked, unless a newer write intervened.
 * - An UPDATE_ACK carries no value: Tofino's ingress cannot truncate, so
 *   a value the parser did not take (longer than 128 bytes, or
 *   fragmented) stays behind the headers, outside the IPv4 total length
 *   and the UDP length the acknowledgement states; receivers trim a frame
 *   to its IPv4 total length.
 * - The 48-bit time registers (lease_until, clock, load_window_start) and
 *   relay_next are 64-bit: Tofino's register cells are 1, 8, 16, 32 or
 *   64 bits. The controller writes and reads them as P4Runtime
 *   bytestrings, so it works with either width.
 * - The clock counts in units of 1/1024 + 1/32768 of Tofino's nanosecond
 *   timestamp: 0.993 µs, so a lease the controller counts in microseconds
 *   ends 0.7% early, never late, and a load window of LOAD_WINDOW units
 *   lasts 99.3 ms.
 * - Bit strings wider than 32 bits (versions, sequence numbers, time) in
 *   a RegisterAction take Tofino's 64-bit (paired) register mode; left for
 *   bf-p4c to place, and not verified here.
 */
#ifndef DISTCACHE_TNA_CACHE_P4
#define DISTCACHE_TNA_CACHE_P4

#include <core.p4>
#include <tna.p4>
#include "../include/types.p4"
#include "../include/params.p4"
#include "parser.p4"

/* A hit's value: word k whole, or as the word the tail bytes come from. */
#define READ_WORD(k) \
    if (meta.words > k) { \
        hdr.value_words[k].setValid(); \
        hdr.value_words[k].w = read_word_##k.execute(meta.slot); \
    } else if (meta.words == k && meta.tail != 0) { \
        meta.tail_word = read_word_##k.execute(meta.slot); \
    }
#define READ_TAIL(j) if (meta.tail > j) { hdr.value_tail[j].setValid(); hdr.value_tail[j].b = meta.tail_word[63 - 8 * j : 56 - 8 * j]; }
/* An UPDATE's or FETCH_REPLY's value into the slot's words. */
#define WRITE_TAIL(j) if (hdr.value_tail[j].isValid()) { meta.tail_word[63 - 8 * j : 56 - 8 * j] = hdr.value_tail[j].b; }
#define WRITE_WORD(k) \
    if (hdr.value_words[k].isValid()) { \
        write_word_##k.execute(meta.slot); \
    } else if (hdr.dc.value_len[7:3] == k && hdr.dc.value_len[2:0] != 0) { \
        write_tail_##k.execute(meta.slot); \
    }
/* Key tail byte j after w whole words, into the left-aligned key. */
#define KEY_TAIL(w, j) if (hdr.key_tail[j].isValid()) { meta.key[255 - 64 * w - 8 * j : 248 - 64 * w - 8 * j] = hdr.key_tail[j].b; }
#define KEY_TAILS(w) KEY_TAIL(w, 0) KEY_TAIL(w, 1) KEY_TAIL(w, 2) KEY_TAIL(w, 3) KEY_TAIL(w, 4) KEY_TAIL(w, 5) KEY_TAIL(w, 6)

control DistCacheCache(inout headers_t hdr, inout metadata_t meta, inout resubmit_h resub,
                       in ingress_intrinsic_metadata_t ig_intr_md,
                       in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                       inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    #include "cache_state.p4"

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

    /* The packet leaves by the read port it came in on, to (addr, port). */
    action send_from_read_port(bit<32> addr, bit<16> port) {
        hdr.ipv4.src_addr = hdr.ipv4.dst_addr;
        hdr.udp.src_port = hdr.udp.dst_port;
        hdr.ipv4.dst_addr = addr;
        hdr.udp.dst_port = port;
        hdr.udp.checksum = 0;
    }

    apply {
        /* ~µs: ns/1024 + ns/32768 (Tofino shifts by constants only). */
        bit<64> ts = (bit<64>)ig_prsr_md.global_tstamp;
        now = (ts >> 10) + (ts >> 15);
        write_clock.execute(0);
        /* The second pass of a fill (resubmitted by the first). */
        bool fill_pass = resub.isValid() && resub.kind == RESUBMIT_FILL;
        resub.setInvalid();
        switch_address.apply();
        if (meta.role != ROLE_NONE) {
            if (!fill_pass) {
                datagrams.count((bit<32>)hdr.dc.op);
            }
            identity.apply();
        }
        bool held = false;
        if (meta.role != ROLE_NONE && meta.cacheable == 1) {
            held = cache_lookup.apply().hit;
        }

        if (meta.role == ROLE_READS) {
            storage_route.apply();
            rolled = 0;
            bit<32> current;
            bit<32> last;
            /* Reads in the current window, and the larger of it and the
             * last window as the load a reply reports (DistCache §4.2),
             * in load and load_last (see the top of this file). */
            if (hdr.dc.op == DC_OP_GET) {
                rolled = roll_window.execute(0);
                counted = count_read.execute(0);
                last = roll_last.execute(0);
                current = rolled == 1 ? 32w1 : counted;
            } else {
                /* The load a relayed reply reports, without counting it. */
                current = read_load.execute(0);
                last = read_last.execute(0);
            }
            meta.load = current > last ? current : last;

            bool hit = false;
            if (hdr.dc.op == DC_OP_GET && held) {
                bit<1> v = read_valid.execute(meta.slot);
                bit<64> until = read_lease.execute(0);
                hit = v == 1 && now < until;
            } else if (hdr.dc.op == DC_OP_GET && meta.cacheable == 1) {
                /* Count-Min (four rows) and Bloom filter (three arrays) of
                 * an uncached key, each indexed by its own slice of the
                 * key digest. Tofino takes no branch inside an action, so
                 * this and the key's packing are in the apply block. */
                bit<16> c0 = count_row0.execute((bit<32>)hdr.dc.key_digest[15:0]);
                bit<16> c1 = count_row1.execute((bit<32>)hdr.dc.key_digest[31:16]);
                bit<16> c2 = count_row2.execute((bit<32>)hdr.dc.key_digest[47:32]);
                bit<16> c3 = count_row3.execute((bit<32>)hdr.dc.key_digest[63:48]);
                bit<16> m = c0 < c1 ? c0 : c1;
                m = m < c2 ? m : c2;
                meta.hot_count = m < c3 ? m : c3;
                bit<16> threshold = read_threshold.execute(0);
                if (threshold != 0 && meta.hot_count >= threshold) {
                    bit<1> b0 = test_set_bloom0.execute((bit<32>)hdr.dc.key_digest[79:64]);
                    bit<1> b1 = test_set_bloom1.execute((bit<32>)hdr.dc.key_digest[95:80]);
                    bit<1> b2 = test_set_bloom2.execute((bit<32>)hdr.dc.key_digest[111:96]);
                    if ((b0 & b1 & b2) == 0) {
                        /* The key's words and tail bytes into one
                         * left-aligned field; the tail starts after the
                         * key's whole words (key_len[5:3] of them), and
                         * Tofino shifts only by constants, so each word
                         * count places the tail bytes itself. */
                        meta.key = 0;
                        if (hdr.key_words[0].isValid()) { meta.key[255:192] = hdr.key_words[0].w; }
                        if (hdr.key_words[1].isValid()) { meta.key[191:128] = hdr.key_words[1].w; }
                        if (hdr.key_words[2].isValid()) { meta.key[127:64]  = hdr.key_words[2].w; }
                        if (hdr.key_words[3].isValid()) { meta.key[63:0]    = hdr.key_words[3].w; }
                        if (hdr.dc.key_len[5:3] == 0) {
                            KEY_TAILS(0)
                        } else if (hdr.dc.key_len[5:3] == 1) {
                            KEY_TAILS(1)
                        } else if (hdr.dc.key_len[5:3] == 2) {
                            KEY_TAILS(2)
                        } else if (hdr.dc.key_len[5:3] == 3) {
                            KEY_TAILS(3)
                        }
                        ig_dprsr_md.digest_type = 1; /* hot_key_t, packed by the deparser */
                    }
                }
            }
            if (hit) {
                cache_hits.count(meta.slot);
                bit<8> len = read_value_len.execute(meta.slot);
                meta.words = len >> 3;
                meta.tail = len & 7;
                READ_WORD(0)  READ_WORD(1)  READ_WORD(2)  READ_WORD(3)
                READ_WORD(4)  READ_WORD(5)  READ_WORD(6)  READ_WORD(7)
                READ_WORD(8)  READ_WORD(9)  READ_WORD(10) READ_WORD(11)
                READ_WORD(12) READ_WORD(13) READ_WORD(14) READ_WORD(15)
                READ_TAIL(0) READ_TAIL(1) READ_TAIL(2) READ_TAIL(3)
                READ_TAIL(4) READ_TAIL(5) READ_TAIL(6)
                hdr.dc.value_version = read_version.execute(meta.slot);
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
                bit<32> h = relay_hash.get({ hdr.ipv4.src_addr, hdr.udp.src_port, hdr.dc.seq });
                bit<32> r = (bit<32>)h[15:0];
                bit<32> addr;
                bit<16> port;
                bit<64> seq;
                if (hdr.dc.op == DC_OP_GET) {
                    addr = swap_client_addr.execute(r);
                    port = swap_client_port.execute(r);
                    seq = swap_client_seq.execute(r);
                } else {
                    addr = read_client_addr.execute(r);
                    port = read_client_port.execute(r);
                    seq = read_client_seq.execute(r);
                }
                relay_new = 0;
                if (addr != hdr.ipv4.src_addr || port != hdr.udp.src_port || seq != hdr.dc.seq) {
                    if (hdr.dc.op == DC_OP_MORE) {
                        meta.drop = 1; /* the slot went to another read */
                    } else {
                        bit<64> n = next_relay.execute(0);
                        relayed = n[47:0] ++ r[15:0];
                        relay_new = 1;
                    }
                }
                /* As v1model: the slot's sequence number is taken even when
                 * the shard has no shim and the read is dropped. */
                relayed = take_relay_seq.execute(r);
                if (meta.drop == 0) {
                    send_from_read_port(meta.shim_addr, meta.shim_port);
                    hdr.dc.seq = relayed;
                }
            } else if (hdr.dc.op == DC_OP_GET_REPLY) {
                /* The shim's reply to a relayed read, back to its client. */
                bit<32> r = (bit<32>)hdr.dc.seq[15:0];
                relay_new = 0;
                relayed = take_relay_seq.execute(r);
                if (relayed == hdr.dc.seq && relayed != 0) {
                    bit<32> addr = read_client_addr.execute(r);
                    bit<16> port = read_client_port.execute(r);
                    hdr.dc.seq = read_client_seq.execute(r);
                    send_from_read_port(addr, port);
                    stamp();
                } else {
                    meta.drop = 1;
                }
            } else {
                meta.drop = 1;
            }
        } else if (meta.role == ROLE_COHERENCE) {
            if (hdr.dc.op == DC_OP_INVALIDATE) {
                if (held) {
                    clear_valid.execute(meta.slot);
                    raise_version.execute(meta.slot);
                }
                reflect(DC_OP_INVALIDATE_ACK);
                hdr.dc.flags = held ? DC_FLAG_HIT : 8w0;
                stamp();
            } else if (hdr.dc.op == DC_OP_UPDATE || hdr.dc.op == DC_OP_FETCH_REPLY) {
                bool write = false;
                bool resubmitted = false;
                bool fits = held && meta.value_fits == 1 && hdr.dc.status == DC_STATUS_OK;
                if (hdr.dc.op == DC_OP_UPDATE) {
                    /* Applied iff the slot's version is the write's: the
                     * version stays as it is. */
                    if (fits) {
                        write = read_version.execute(meta.slot) == hdr.dc.value_version;
                    }
                } else if (!fill_pass) {
                    /* A fill's first pass: the slot is invalid, waits for
                     * this very FETCH and holds no newer version. */
                    if (fits) {
                        bit<64> seq = read_fill_seq.execute(meta.slot);
                        bit<1> v = read_valid.execute(meta.slot);
                        bit<64> ver = read_version.execute(meta.slot);
                        if (v == 0 && seq == hdr.dc.seq && hdr.dc.value_version >= ver) {
                            resub.setValid();
                            resub.kind = RESUBMIT_FILL;
                            resub.pad = 0;
                            ig_dprsr_md.resubmit_type = 1;
                            resubmitted = true;
                        }
                    }
                } else if (fits) {
                    /* A fill's second pass. */
                    write = fill_version.execute(meta.slot) == 1;
                }
                if (write) {
                    meta.tail_word = 0;
                    WRITE_TAIL(0) WRITE_TAIL(1) WRITE_TAIL(2) WRITE_TAIL(3)
                    WRITE_TAIL(4) WRITE_TAIL(5) WRITE_TAIL(6)
                    WRITE_WORD(0)  WRITE_WORD(1)  WRITE_WORD(2)  WRITE_WORD(3)
                    WRITE_WORD(4)  WRITE_WORD(5)  WRITE_WORD(6)  WRITE_WORD(7)
                    WRITE_WORD(8)  WRITE_WORD(9)  WRITE_WORD(10) WRITE_WORD(11)
                    WRITE_WORD(12) WRITE_WORD(13) WRITE_WORD(14) WRITE_WORD(15)
                    write_value_len.execute(meta.slot);
                    set_valid.execute(meta.slot);
                }
                if (hdr.dc.op == DC_OP_UPDATE) {
                    /* The acknowledgement carries the key, not the value:
                     * parsed value words are dropped; unparsed bytes stay
                     * outside the stated lengths (top of this file). */
                    drop_value();
                    reflect(DC_OP_UPDATE_ACK);
                    hdr.dc.flags = 0;
                    set_lengths(0);
                    stamp();
                } else if (!resubmitted) {
                    /* The controller learns the fill's outcome from the
                     * slot (after the second pass of one that passed). */
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

#endif /* DISTCACHE_TNA_CACHE_P4 */
