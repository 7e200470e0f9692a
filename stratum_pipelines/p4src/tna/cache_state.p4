/*
 * The state of the TNA cache control (cache.p4): its registers, counters
 * and hash, and the RegisterActions through which a packet touches each
 * register at most once per pass. Included inside DistCacheCache, whose
 * parameters (hdr, meta) and locals the RegisterActions read; the
 * restructuring against the v1model control is described at the top of
 * cache.p4.
 */

/* A slot's word k: read (a hit), written from the parsed word k or from
 * the tail word (an UPDATE or a fill). */
#define VALUE_WORD_ACTIONS(k) \
    RegisterAction<bit<64>, bit<32>, bit<64>>(value_words_##k) read_word_##k = { \
        void apply(inout bit<64> value, out bit<64> rv) { rv = value; } \
    }; \
    RegisterAction<bit<64>, bit<32>, bit<64>>(value_words_##k) write_word_##k = { \
        void apply(inout bit<64> value) { value = hdr.value_words[k].w; } \
    }; \
    RegisterAction<bit<64>, bit<32>, bit<64>>(value_words_##k) write_tail_##k = { \
        void apply(inout bit<64> value) { value = meta.tail_word; } \
    };

bit<64> now; /* this packet's time in the switch's clock */

@id(0x16000020) @name(".value_words_0")  Register<bit<64>, bit<32>>(CACHE_SLOTS) value_words_0;
@id(0x16000021) @name(".value_words_1")  Register<bit<64>, bit<32>>(CACHE_SLOTS) value_words_1;
@id(0x16000022) @name(".value_words_2")  Register<bit<64>, bit<32>>(CACHE_SLOTS) value_words_2;
@id(0x16000023) @name(".value_words_3")  Register<bit<64>, bit<32>>(CACHE_SLOTS) value_words_3;
@id(0x16000024) @name(".value_words_4")  Register<bit<64>, bit<32>>(CACHE_SLOTS) value_words_4;
@id(0x16000025) @name(".value_words_5")  Register<bit<64>, bit<32>>(CACHE_SLOTS) value_words_5;
@id(0x16000026) @name(".value_words_6")  Register<bit<64>, bit<32>>(CACHE_SLOTS) value_words_6;
@id(0x16000027) @name(".value_words_7")  Register<bit<64>, bit<32>>(CACHE_SLOTS) value_words_7;
@id(0x16000028) @name(".value_words_8")  Register<bit<64>, bit<32>>(CACHE_SLOTS) value_words_8;
@id(0x16000029) @name(".value_words_9")  Register<bit<64>, bit<32>>(CACHE_SLOTS) value_words_9;
@id(0x1600002a) @name(".value_words_10") Register<bit<64>, bit<32>>(CACHE_SLOTS) value_words_10;
@id(0x1600002b) @name(".value_words_11") Register<bit<64>, bit<32>>(CACHE_SLOTS) value_words_11;
@id(0x1600002c) @name(".value_words_12") Register<bit<64>, bit<32>>(CACHE_SLOTS) value_words_12;
@id(0x1600002d) @name(".value_words_13") Register<bit<64>, bit<32>>(CACHE_SLOTS) value_words_13;
@id(0x1600002e) @name(".value_words_14") Register<bit<64>, bit<32>>(CACHE_SLOTS) value_words_14;
@id(0x1600002f) @name(".value_words_15") Register<bit<64>, bit<32>>(CACHE_SLOTS) value_words_15;
@id(0x16000002) @name(".value_len")   Register<bit<8>, bit<32>>(CACHE_SLOTS)  value_len;
@id(0x16000003) @name(".valid")       Register<bit<1>, bit<32>>(CACHE_SLOTS)  valid;
@id(0x16000004) @name(".version")     Register<bit<64>, bit<32>>(CACHE_SLOTS) version;
@id(0x16000005) @name(".fill_seq")    Register<bit<64>, bit<32>>(CACHE_SLOTS) fill_seq;
@id(0x16000006) @name(".lease_until") Register<bit<64>, bit<32>>(1) lease_until;
@id(0x16000007) @name(".clock")       Register<bit<64>, bit<32>>(1) clock;
@id(0x16000008) @name(".load")        Register<bit<32>, bit<32>>(1) load; /* this window */
@id(0x16000017) @name(".load_last")   Register<bit<32>, bit<32>>(1) load_last; /* the last window */
@id(0x16000009) @name(".load_window_start") Register<bit<64>, bit<32>>(1) load_window_start;
@id(0x1600000a) @name(".sketch_row0") Register<bit<16>, bit<32>>(SKETCH_WIDTH) sketch_row0;
@id(0x1600000b) @name(".sketch_row1") Register<bit<16>, bit<32>>(SKETCH_WIDTH) sketch_row1;
@id(0x1600000c) @name(".sketch_row2") Register<bit<16>, bit<32>>(SKETCH_WIDTH) sketch_row2;
@id(0x1600000d) @name(".sketch_row3") Register<bit<16>, bit<32>>(SKETCH_WIDTH) sketch_row3;
@id(0x1600000e) @name(".bloom0")      Register<bit<1>, bit<32>>(BLOOM_BITS) bloom0;
@id(0x1600000f) @name(".bloom1")      Register<bit<1>, bit<32>>(BLOOM_BITS) bloom1;
@id(0x16000010) @name(".bloom2")      Register<bit<1>, bit<32>>(BLOOM_BITS) bloom2;
@id(0x16000011) @name(".hot_threshold") Register<bit<16>, bit<32>>(1) hot_threshold;
@id(0x16000012) @name(".relay_client_addr") Register<bit<32>, bit<32>>(RELAY_SLOTS) relay_client_addr;
@id(0x16000013) @name(".relay_client_port") Register<bit<16>, bit<32>>(RELAY_SLOTS) relay_client_port;
@id(0x16000014) @name(".relay_client_seq")  Register<bit<64>, bit<32>>(RELAY_SLOTS) relay_client_seq;
@id(0x16000015) @name(".relay_seq")         Register<bit<64>, bit<32>>(RELAY_SLOTS) relay_seq;
@id(0x16000016) @name(".relay_next")        Register<bit<64>, bit<32>>(1) relay_next;

@id(0x12000001) @name(".cache_hits") Counter<bit<64>, bit<32>>(CACHE_SLOTS, CounterType_t.PACKETS) cache_hits;
@id(0x12000002) @name(".datagrams")  Counter<bit<64>, bit<32>>(256, CounterType_t.PACKETS_AND_BYTES) datagrams;

/* The relay slot of a read: a CRC-32 of the client's address, port
 * and sequence number, as the v1model hash (crc32 modulo RELAY_SLOTS). */
Hash<bit<32>>(HashAlgorithm_t.CRC32) relay_hash;

VALUE_WORD_ACTIONS(0)  VALUE_WORD_ACTIONS(1)  VALUE_WORD_ACTIONS(2)  VALUE_WORD_ACTIONS(3)
VALUE_WORD_ACTIONS(4)  VALUE_WORD_ACTIONS(5)  VALUE_WORD_ACTIONS(6)  VALUE_WORD_ACTIONS(7)
VALUE_WORD_ACTIONS(8)  VALUE_WORD_ACTIONS(9)  VALUE_WORD_ACTIONS(10) VALUE_WORD_ACTIONS(11)
VALUE_WORD_ACTIONS(12) VALUE_WORD_ACTIONS(13) VALUE_WORD_ACTIONS(14) VALUE_WORD_ACTIONS(15)

RegisterAction<bit<8>, bit<32>, bit<8>>(value_len) read_value_len = {
    void apply(inout bit<8> value, out bit<8> rv) { rv = value; }
};
RegisterAction<bit<8>, bit<32>, bit<8>>(value_len) write_value_len = {
    void apply(inout bit<8> value) { value = hdr.dc.value_len[7:0]; }
};
RegisterAction<bit<1>, bit<32>, bit<1>>(valid) read_valid = {
    void apply(inout bit<1> value, out bit<1> rv) { rv = value; }
};
RegisterAction<bit<1>, bit<32>, bit<1>>(valid) clear_valid = {
    void apply(inout bit<1> value) { value = 0; }
};
RegisterAction<bit<1>, bit<32>, bit<1>>(valid) set_valid = {
    void apply(inout bit<1> value) { value = 1; }
};
RegisterAction<bit<64>, bit<32>, bit<64>>(version) read_version = {
    void apply(inout bit<64> value, out bit<64> rv) { rv = value; }
};
/* INVALIDATE: the slot's version rises to the write's. */
RegisterAction<bit<64>, bit<32>, bit<64>>(version) raise_version = {
    void apply(inout bit<64> value) {
        if (hdr.dc.value_version > value) {
            value = hdr.dc.value_version;
        }
    }
};
/* A fill's second pass: take the fill's version unless the slot's is
 * newer; 1 iff taken. */
RegisterAction<bit<64>, bit<32>, bit<1>>(version) fill_version = {
    void apply(inout bit<64> value, out bit<1> rv) {
        rv = 0;
        if (hdr.dc.value_version >= value) {
            value = hdr.dc.value_version;
            rv = 1;
        }
    }
};
RegisterAction<bit<64>, bit<32>, bit<64>>(fill_seq) read_fill_seq = {
    void apply(inout bit<64> value, out bit<64> rv) { rv = value; }
};
RegisterAction<bit<64>, bit<32>, bit<64>>(lease_until) read_lease = {
    void apply(inout bit<64> value, out bit<64> rv) { rv = value; }
};
RegisterAction<bit<64>, bit<32>, bit<64>>(clock) write_clock = {
    void apply(inout bit<64> value) { value = now; }
};

/* The load window: 1 when this read starts a new window. */
RegisterAction<bit<64>, bit<32>, bit<1>>(load_window_start) roll_window = {
    void apply(inout bit<64> value, out bit<1> rv) {
        rv = 0;
        if (now - value >= (bit<64>)LOAD_WINDOW) {
            value = now;
            rv = 1;
        }
    }
};
bit<1> rolled;
/* A read counted: in a new window this window's count restarts at 1
 * and the old count is returned (it becomes the last window's);
 * otherwise the count after this read is returned. */
RegisterAction<bit<32>, bit<32>, bit<32>>(load) count_read = {
    void apply(inout bit<32> value, out bit<32> rv) {
        if (rolled == 1) {
            rv = value;
            value = 1;
        } else {
            value = value + 1;
            rv = value;
        }
    }
};
RegisterAction<bit<32>, bit<32>, bit<32>>(load) read_load = {
    void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
};
bit<32> counted;
/* The last window's count, replaced by this window's old count in a
 * new window. */
RegisterAction<bit<32>, bit<32>, bit<32>>(load_last) roll_last = {
    void apply(inout bit<32> value, out bit<32> rv) {
        if (rolled == 1) {
            value = counted;
        }
        rv = value;
    }
};
RegisterAction<bit<32>, bit<32>, bit<32>>(load_last) read_last = {
    void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
};

/* Count-Min: a saturating increment, returning the new count. */
RegisterAction<bit<16>, bit<32>, bit<16>>(sketch_row0) count_row0 = {
    void apply(inout bit<16> value, out bit<16> rv) { value = value |+| 1; rv = value; }
};
RegisterAction<bit<16>, bit<32>, bit<16>>(sketch_row1) count_row1 = {
    void apply(inout bit<16> value, out bit<16> rv) { value = value |+| 1; rv = value; }
};
RegisterAction<bit<16>, bit<32>, bit<16>>(sketch_row2) count_row2 = {
    void apply(inout bit<16> value, out bit<16> rv) { value = value |+| 1; rv = value; }
};
RegisterAction<bit<16>, bit<32>, bit<16>>(sketch_row3) count_row3 = {
    void apply(inout bit<16> value, out bit<16> rv) { value = value |+| 1; rv = value; }
};
/* Bloom: test and set, returning the bit before. */
RegisterAction<bit<1>, bit<32>, bit<1>>(bloom0) test_set_bloom0 = {
    void apply(inout bit<1> value, out bit<1> rv) { rv = value; value = 1; }
};
RegisterAction<bit<1>, bit<32>, bit<1>>(bloom1) test_set_bloom1 = {
    void apply(inout bit<1> value, out bit<1> rv) { rv = value; value = 1; }
};
RegisterAction<bit<1>, bit<32>, bit<1>>(bloom2) test_set_bloom2 = {
    void apply(inout bit<1> value, out bit<1> rv) { rv = value; value = 1; }
};
RegisterAction<bit<16>, bit<32>, bit<16>>(hot_threshold) read_threshold = {
    void apply(inout bit<16> value, out bit<16> rv) { rv = value; }
};

/* The relay slot of a GET takes the client's address, port and
 * sequence number, returning what it held; a MORE or a reply only
 * reads. */
RegisterAction<bit<32>, bit<32>, bit<32>>(relay_client_addr) swap_client_addr = {
    void apply(inout bit<32> value, out bit<32> rv) { rv = value; value = hdr.ipv4.src_addr; }
};
RegisterAction<bit<32>, bit<32>, bit<32>>(relay_client_addr) read_client_addr = {
    void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
};
RegisterAction<bit<16>, bit<32>, bit<16>>(relay_client_port) swap_client_port = {
    void apply(inout bit<16> value, out bit<16> rv) { rv = value; value = hdr.udp.src_port; }
};
RegisterAction<bit<16>, bit<32>, bit<16>>(relay_client_port) read_client_port = {
    void apply(inout bit<16> value, out bit<16> rv) { rv = value; }
};
RegisterAction<bit<64>, bit<32>, bit<64>>(relay_client_seq) swap_client_seq = {
    void apply(inout bit<64> value, out bit<64> rv) { rv = value; value = hdr.dc.seq; }
};
RegisterAction<bit<64>, bit<32>, bit<64>>(relay_client_seq) read_client_seq = {
    void apply(inout bit<64> value, out bit<64> rv) { rv = value; }
};
RegisterAction<bit<64>, bit<32>, bit<64>>(relay_next) next_relay = {
    void apply(inout bit<64> value, out bit<64> rv) { value = value + 1; rv = value; }
};
bit<1> relay_new;  /* the slot was taken for this read */
bit<64> relayed;   /* the sequence number the shim sees */
RegisterAction<bit<64>, bit<32>, bit<64>>(relay_seq) take_relay_seq = {
    void apply(inout bit<64> value, out bit<64> rv) {
        if (relay_new == 1) {
            value = relayed;
        }
        rv = value;
    }
};
