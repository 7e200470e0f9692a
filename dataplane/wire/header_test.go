package wire_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/placement/hashing"
	"github.com/distcache/distcache/placement/partmap"
)

// msgOpt sets one field of a test message built by msg.
type msgOpt func(*wire.Message)

// msg returns a GET for key "key:42" with sequence number 1, changed by opts.
func msg(opts ...msgOpt) *wire.Message {
	m := &wire.Message{Header: wire.Header{Op: wire.OpGet, Seq: 1}, Key: []byte("key:42")}
	for _, o := range opts {
		o(m)
	}
	return m
}

func withOp(op wire.Op) msgOpt           { return func(m *wire.Message) { m.Op = op } }
func withFlags(f wire.Flag) msgOpt       { return func(m *wire.Message) { m.Flags |= f } }
func withStatus(s wire.Status) msgOpt    { return func(m *wire.Message) { m.Status = s } }
func withSeq(seq uint64) msgOpt          { return func(m *wire.Message) { m.Seq = seq } }
func withKey(k []byte) msgOpt            { return func(m *wire.Message) { m.Key = k } }
func withValue(v []byte) msgOpt          { return func(m *wire.Message) { m.Value = v } }
func withVersion(v uint64) msgOpt        { return func(m *wire.Message) { m.ValueVersion = v } }
func withMapVersion(v uint64) msgOpt     { return func(m *wire.Message) { m.MapVersion = v } }
func withDigest(d hashing.Digest) msgOpt { return func(m *wire.Message) { m.Digest = d } }
func withEpoch(e uint64) msgOpt          { return func(m *wire.Message) { m.SetEpoch(e) } }
func withTelemetry(node, load uint32) msgOpt {
	return func(m *wire.Message) {
		m.Flags |= wire.FlagTelemetry
		m.NodeID, m.Load = node, load
	}
}

// pattern returns n bytes b[i] = i % mod (mod ≤ 256), a value whose
// fragments all differ.
func pattern(n, mod int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i % mod)
	}
	return b
}

// repeat returns n copies of c.
func repeat(c byte, n int) []byte { return bytes.Repeat([]byte{c}, n) }

// raw lays a packet out by hand, following the table in doc.go and not the
// package's encoder, so that Parse is tested against the documented layout.
// keyLen is written as given, so it can disagree with len(key).
func raw(h wire.Header, keyLen int, key, frag []byte) []byte {
	b := make([]byte, wire.HeaderLen, wire.HeaderLen+len(key)+len(frag))
	binary.BigEndian.PutUint16(b[0:], wire.Magic)
	b[2] = wire.ProtocolVersion
	b[3], b[4], b[5] = byte(h.Op), byte(h.Flags), byte(h.Status)
	binary.BigEndian.PutUint16(b[6:], uint16(keyLen))
	binary.BigEndian.PutUint64(b[8:], h.Seq)
	copy(b[16:32], h.Digest[:])
	binary.BigEndian.PutUint32(b[32:], h.NodeID)
	binary.BigEndian.PutUint32(b[36:], h.Load)
	binary.BigEndian.PutUint32(b[40:], h.ValueLen)
	binary.BigEndian.PutUint32(b[44:], h.FragOffset)
	binary.BigEndian.PutUint64(b[48:], h.ValueVersion)
	binary.BigEndian.PutUint64(b[56:], h.MapVersion)
	b = append(b, key...)
	return append(b, frag...)
}

// fragment returns a hand-laid packet of key "k" carrying frag at off of a
// valueLen-byte value, with flags f.
func fragment(f wire.Flag, valueLen, off uint32, frag []byte) []byte {
	key := []byte("k")
	h := wire.Header{Op: wire.OpPut, Flags: f, Seq: 9, Digest: hashing.DigestOf(key), ValueLen: valueLen, FragOffset: off}
	return raw(h, len(key), key, frag)
}

// valid returns the datagram of a GET_REPLY carrying "hello".
func valid() []byte {
	key := []byte("key:42")
	h := wire.Header{Op: wire.OpGetReply, Seq: 1, Digest: hashing.DigestOf(key), ValueLen: 5}
	return raw(h, len(key), key, []byte("hello"))
}

// set returns valid() with b[off] = v.
func set(off int, v ...byte) []byte {
	b := valid()
	copy(b[off:], v)
	return b
}

func TestParseErrors(t *testing.T) {
	withKeyLen := func(n uint16) []byte {
		b := valid()
		binary.BigEndian.PutUint16(b[6:], n)
		return b
	}
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"nil", nil, wire.ErrTruncated},
		{"one byte", []byte{0xDC}, wire.ErrTruncated},
		{"short header", valid()[:wire.HeaderLen-1], wire.ErrTruncated},
		{"header without key", valid()[:wire.HeaderLen], wire.ErrTruncated},
		{"short key", valid()[:wire.HeaderLen+5], wire.ErrTruncated},
		{"key length past the datagram", withKeyLen(100), wire.ErrTruncated},
		{"magic zero", set(0, 0, 0), wire.ErrMagic},
		{"magic swapped", set(0, 0xAC, 0xDC), wire.ErrMagic},
		{"version 0", set(2, 0), wire.ErrVersion},
		{"version 2", set(2, 2), wire.ErrVersion},
		{"op 0", set(3, 0), wire.ErrOp},
		{"op 22", set(3, 22), wire.ErrOp},
		{"op 255", set(3, 255), wire.ErrOp},
		{"FlagEpoch with FlagTelemetry", set(4, byte(wire.FlagEpoch|wire.FlagTelemetry)), wire.ErrFlags},
		{"FlagAuth without room for the tag", set(4, byte(wire.FlagAuth)), wire.ErrTruncated},
		{"FlagEpoch with FlagTelemetry and FlagHit", set(4, 0x83), wire.ErrFlags},
		{"status 11", set(5, 11), wire.ErrStatus},
		{"status 255", set(5, 255), wire.ErrStatus},
		{"key length 0", withKeyLen(0), wire.ErrKey},
		{"key length 513", withKeyLen(wire.MaxKeyLen + 1), wire.ErrKey},
		{"key length 65535", withKeyLen(0xFFFF), wire.ErrKey},
		{"digest byte flipped", set(16, valid()[16]^1), wire.ErrDigest},
		{"digest zero", set(16, make([]byte, hashing.DigestSize)...), wire.ErrDigest},
		{"key byte flipped", set(wire.HeaderLen, 'K'), wire.ErrDigest},
		{"key length 1 less", withKeyLen(5), wire.ErrDigest},
		{"value over MaxValueLen", fragment(wire.FlagFragmented, wire.MaxValueLen+1, 0, []byte("x")), wire.ErrValue},
		{"value 4 GiB", fragment(wire.FlagFragmented, 0xFFFFFFFF, 0, []byte("x")), wire.ErrValue},
		{"fragment past the value end", fragment(wire.FlagFragmented, 10, 8, []byte("xyz")), wire.ErrValue},
		{"fragment offset past the value", fragment(wire.FlagFragmented, 10, 10, []byte("x")), wire.ErrValue},
		{"fragment offset overflows uint32", fragment(wire.FlagFragmented, wire.MaxValueLen, 0xFFFFFFFF, []byte("xy")), wire.ErrValue},
		{"value longer than ValueLen", fragment(0, 3, 0, []byte("four")), wire.ErrValue},
		{"unfragmented with offset", fragment(0, 10, 5, []byte("fghij")), wire.ErrValue},
		{"unfragmented short", fragment(0, 10, 0, []byte("abcde")), wire.ErrValue},
		{"unfragmented empty of non-empty value", fragment(0, 1, 0, nil), wire.ErrValue},
		{"fragmented empty fragment", fragment(wire.FlagFragmented, 10, 0, nil), wire.ErrValue},
		{"fragmented empty fragment at end", fragment(wire.FlagFragmented, 10, 10, nil), wire.ErrValue},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := wire.Parse(tc.in)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Parse() error = %v, want %v", err, tc.want)
			}
			for _, other := range []error{wire.ErrTruncated, wire.ErrMagic, wire.ErrVersion, wire.ErrOp, wire.ErrFlags, wire.ErrStatus, wire.ErrKey, wire.ErrDigest, wire.ErrValue} {
				if !errors.Is(other, tc.want) && errors.Is(err, other) {
					t.Errorf("Parse() error = %v, also matches %v", err, other)
				}
			}
		})
	}
}

func TestParseAccepts(t *testing.T) {
	tests := []struct {
		name         string
		in           []byte
		wantFragment string
		wantComplete bool
	}{
		{"hand-laid reply", valid(), "hello", true},
		{"first fragment", fragment(wire.FlagFragmented, 10, 0, []byte("abc")), "abc", false},
		{"middle fragment", fragment(wire.FlagFragmented, 10, 3, []byte("def")), "def", false},
		{"last fragment", fragment(wire.FlagFragmented, 10, 6, []byte("ghij")), "ghij", false},
		{"one-byte value", fragment(0, 1, 0, []byte("z")), "z", true},
		{"empty value", fragment(0, 0, 0, nil), "", true},
		{"largest fragment offset", fragment(wire.FlagFragmented, wire.MaxValueLen, wire.MaxValueLen-1, []byte("z")), "z", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := wire.Parse(tc.in)
			if err != nil {
				t.Fatalf("Parse() error = %v", err)
			}
			if string(p.Fragment) != tc.wantFragment {
				t.Errorf("Fragment = %q, want %q", p.Fragment, tc.wantFragment)
			}
			if p.Complete() != tc.wantComplete {
				t.Errorf("Complete() = %v, want %v", p.Complete(), tc.wantComplete)
			}
			if hashing.DigestOf(p.Key) != p.Digest {
				t.Errorf("Digest %x is not the key's", p.Digest)
			}
		})
	}
}

// TestParseAliases checks that Key and Fragment alias the datagram and that
// Key cannot be appended to over the value.
func TestParseAliases(t *testing.T) {
	b := valid()
	p, err := wire.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if &p.Key[0] != &b[wire.HeaderLen] || &p.Fragment[0] != &b[wire.HeaderLen+len(p.Key)] {
		t.Fatal("Key and Fragment do not alias the datagram")
	}
	if cap(p.Key) != len(p.Key) {
		t.Errorf("cap(Key) = %d, want %d: appending to Key would overwrite the value", cap(p.Key), len(p.Key))
	}
}

var (
	allOps = []wire.Op{
		wire.OpGet, wire.OpGetReply, wire.OpPut, wire.OpPutReply, wire.OpDel, wire.OpDelReply,
		wire.OpInvalidate, wire.OpInvalidateAck, wire.OpUpdate, wire.OpUpdateAck,
		wire.OpFetch, wire.OpFetchReply, wire.OpPing, wire.OpPong,
	}
	allStatuses = []wire.Status{
		wire.StatusOK, wire.StatusNotFound, wire.StatusNotOwner, wire.StatusUnavailable,
		wire.StatusCoherence, wire.StatusTooLarge, wire.StatusOverloaded, wire.StatusInternal,
	}
	// allFlags is every combination of the flags a caller sets; the encoder
	// owns FlagFragmented.
	allFlags = func() []wire.Flag {
		var fs []wire.Flag
		for f := range wire.Flag(8) {
			var flags wire.Flag
			for i, bit := range []wire.Flag{wire.FlagHit, wire.FlagTelemetry, wire.FlagDirect} {
				if f&(1<<i) != 0 {
					flags |= bit
				}
			}
			fs = append(fs, flags)
		}
		return fs
	}()
)

func TestRoundTrip(t *testing.T) {
	type row struct {
		name string
		m    *wire.Message
	}
	var rows []row
	for _, op := range allOps {
		for _, st := range allStatuses {
			for _, f := range allFlags {
				rows = append(rows, row{
					name: fmt.Sprintf("%v/%v/flags=%#x", op, st, uint8(f)),
					m: msg(withOp(op), withStatus(st), withFlags(f), withSeq(uint64(op)<<40|uint64(st)<<8|uint64(f)),
						withValue(pattern(int(op)*int(st+1), 251)), withVersion(uint64(op)*1000+1), withMapVersion(uint64(st)+7)),
				})
			}
		}
	}
	rows = append(rows,
		row{"key of MaxKeyLen", msg(withKey(repeat('k', wire.MaxKeyLen)), withValue([]byte("v")))},
		row{"key of MaxKeyLen filling MinDatagram", msg(withKey(repeat('k', wire.MaxKeyLen)), withValue(repeat('v', wire.FragmentCapacity(wire.MinDatagram, wire.MaxKeyLen))))},
		row{"one-byte key", msg(withKey([]byte{0}), withValue([]byte("v")))},
		row{"binary key", msg(withKey(pattern(256, 256)))},
		row{"empty value", msg(withOp(wire.OpPut), withValue(nil))},
		row{"empty non-nil value", msg(withOp(wire.OpPut), withValue([]byte{}))},
		row{"value filling DefaultDatagram", msg(withOp(wire.OpPut), withValue(pattern(wire.FragmentCapacity(wire.DefaultDatagram, 6), 251)))},
		row{"all bits set", msg(withOp(wire.OpPong), withStatus(wire.StatusInternal), withFlags(wire.FlagHit|wire.FlagDirect), withTelemetry(^uint32(0), ^uint32(0)),
			withSeq(^uint64(0)), withVersion(^uint64(0)), withMapVersion(^uint64(0)))},
		row{"explicit correct digest", msg(withDigest(hashing.DigestOfString("key:42")))},
		row{"FlagFragmented cleared for one datagram", msg(withFlags(wire.FlagFragmented|wire.FlagHit), withValue([]byte("small")))},
	)
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.m
			b, next, err := wire.AppendDatagram(nil, m, 0, wire.DefaultDatagram)
			if err != nil {
				t.Fatalf("AppendDatagram() error = %v", err)
			}
			if next != len(m.Value) {
				t.Errorf("next offset = %d, want %d", next, len(m.Value))
			}
			if want := wire.HeaderLen + len(m.Key) + len(m.Value); len(b) != want {
				t.Errorf("datagram of %d bytes, want %d", len(b), want)
			}
			p, err := wire.Parse(b)
			if err != nil {
				t.Fatalf("Parse() error = %v", err)
			}
			want := m.Header
			want.Flags &^= wire.FlagFragmented
			want.Digest = hashing.DigestOf(m.Key)
			want.ValueLen = uint32(len(m.Value))
			if p.Header != want {
				t.Errorf("header = %+v\nwant     %+v", p.Header, want)
			}
			if !bytes.Equal(p.Key, m.Key) || !bytes.Equal(p.Fragment, m.Value) {
				t.Errorf("key, value = %q, %q; want %q, %q", p.Key, p.Fragment, m.Key, m.Value)
			}
			if !p.Complete() {
				t.Error("Complete() = false")
			}
			// The hand layout agrees with the encoder byte for byte.
			if r := raw(want, len(m.Key), m.Key, m.Value); !bytes.Equal(r, b) {
				t.Errorf("encoder and doc.go layout differ:\n got %x\nwant %x", b, r)
			}
			d, err := wire.Decode(b)
			if err != nil {
				t.Fatalf("Decode() error = %v", err)
			}
			if d.Header != want || !bytes.Equal(d.Key, m.Key) || !bytes.Equal(d.Value, m.Value) {
				t.Errorf("Decode() = %+v, want header %+v", d, want)
			}
			e, err := wire.Encode(m, wire.DefaultDatagram)
			if err != nil || !bytes.Equal(e, b) {
				t.Errorf("Encode() = %x, %v; want %x", e, err, b)
			}
		})
	}
}

func TestOpString(t *testing.T) {
	names := []string{"GET", "GET_REPLY", "PUT", "PUT_REPLY", "DEL", "DEL_REPLY",
		"INVALIDATE", "INVALIDATE_ACK", "UPDATE", "UPDATE_ACK", "FETCH",
		"FETCH_REPLY", "PING", "PONG", "RMW", "RMW_REPLY"}
	tests := []struct {
		op   wire.Op
		want string
	}{
		{0, "Op(0)"},
		{wire.OpMore, "MORE"},
		{wire.OpFlush, "FLUSH"},
		{20, "RENEW"},
		{22, "Op(22)"},
		{255, "Op(255)"},
	}
	for i, op := range allOps {
		tests = append(tests, struct {
			op   wire.Op
			want string
		}{op, names[i]})
	}
	for _, tc := range tests {
		if got := tc.op.String(); got != tc.want {
			t.Errorf("Op(%d).String() = %q, want %q", uint8(tc.op), got, tc.want)
		}
	}
}

func TestOpReply(t *testing.T) {
	tests := []struct {
		req, reply wire.Op
	}{
		{wire.OpGet, wire.OpGetReply},
		{wire.OpPut, wire.OpPutReply},
		{wire.OpDel, wire.OpDelReply},
		{wire.OpInvalidate, wire.OpInvalidateAck},
		{wire.OpUpdate, wire.OpUpdateAck},
		{wire.OpFetch, wire.OpFetchReply},
		{wire.OpPing, wire.OpPong},
		{wire.OpRMW, wire.OpRMWReply},
		{wire.OpFlush, wire.OpFlushAck},
		{wire.OpRenew, wire.OpRenewReply},
	}
	for _, tc := range tests {
		t.Run(tc.req.String(), func(t *testing.T) {
			if got := tc.req.Reply(); got != tc.reply {
				t.Errorf("Reply() = %v, want %v", got, tc.reply)
			}
			if tc.req.IsReply() {
				t.Errorf("%v.IsReply() = true", tc.req)
			}
			if !tc.reply.IsReply() {
				t.Errorf("%v.IsReply() = false", tc.reply)
			}
		})
	}
	for _, op := range []wire.Op{0, wire.OpMore, wire.OpFlush, 20, 254, 255} {
		if op.IsReply() {
			t.Errorf("Op(%d).IsReply() = true for an op that answers no request", uint8(op))
		}
	}
}

func TestStatusString(t *testing.T) {
	tests := []struct {
		s    wire.Status
		want string
	}{
		{wire.StatusOK, "ok"},
		{wire.StatusNotFound, "not_found"},
		{wire.StatusNotOwner, "not_owner"},
		{wire.StatusUnavailable, "unavailable"},
		{wire.StatusCoherence, "coherence_timeout"},
		{wire.StatusTooLarge, "too_large"},
		{wire.StatusOverloaded, "overloaded"},
		{wire.StatusInternal, "internal"},
		{wire.StatusInvalid, "invalid"},
		{wire.StatusUncacheable, "uncacheable"},
		{wire.StatusWrongType, "wrong_type"},
		{11, "Status(11)"},
		{255, "Status(255)"},
	}
	for _, tc := range tests {
		if got := tc.s.String(); got != tc.want {
			t.Errorf("Status(%d).String() = %q, want %q", uint8(tc.s), got, tc.want)
		}
	}
}

func TestHeaderHas(t *testing.T) {
	h := wire.Header{Flags: wire.FlagHit | wire.FlagTelemetry}
	tests := []struct {
		f    wire.Flag
		want bool
	}{
		{0, true},
		{wire.FlagHit, true},
		{wire.FlagHit | wire.FlagTelemetry, true},
		{wire.FlagFragmented, false},
		{wire.FlagHit | wire.FlagDirect, false},
	}
	for _, tc := range tests {
		if got := h.Has(tc.f); got != tc.want {
			t.Errorf("Has(%#x) = %v, want %v", uint8(tc.f), got, tc.want)
		}
	}
}

// TestParseCompleteWithFragmentedFlag: AppendDatagram sets FlagFragmented
// only when the value needs more than one datagram, so a packet carrying its
// whole value never has it. Parse should reject such a packet, as it rejects
// the converse (an incomplete packet without the flag); accepting it makes
// the encoding non-canonical (FuzzParse/3c2cd7a6ef7507c5 is the same case).
func TestParseCompleteWithFragmentedFlag(t *testing.T) {
	b := fragment(wire.FlagFragmented, 3, 0, []byte("abc"))
	p, err := wire.Parse(b)
	if !errors.Is(err, wire.ErrValue) {
		t.Errorf("Parse() = %+v, %v; want ErrValue for a complete packet with FlagFragmented", p.Header, err)
	}
}

// TestPeekOp checks that PeekOp reads the op of any datagram with a whole
// header of this protocol, valid or not, and 0 of anything else.
func TestPeekOp(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want wire.Op
	}{
		{"valid", valid(), wire.OpGetReply},
		{"invalid after the op", set(16, valid()[16]^1), wire.OpGetReply},
		{"unknown op", set(3, 22), wire.Op(22)},
		{"nil", nil, 0},
		{"short header", valid()[:wire.HeaderLen-1], 0},
		{"magic zero", set(0, 0, 0), 0},
		{"version 2 (stamped)", set(2, 2), wire.OpGetReply},
		{"version 3", set(2, 3), 0},
	}
	for _, tt := range tests {
		if got := wire.PeekOp(tt.in); got != tt.want {
			t.Errorf("%s: PeekOp = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestSwitchCacheable(t *testing.T) {
	tests := []struct {
		key, value int
		want       bool
	}{
		{1, 0, true},
		{wire.MaxSwitchKeyLen, wire.MaxSwitchValueLen, true},
		{wire.MaxSwitchKeyLen + 1, 8, false},
		{16, wire.MaxSwitchValueLen + 1, false},
		{0, 8, false},
		{16, -1, false},
	}
	for _, tt := range tests {
		if got := wire.SwitchCacheable(tt.key, tt.value); got != tt.want {
			t.Errorf("SwitchCacheable(%d, %d) = %v, want %v", tt.key, tt.value, got, tt.want)
		}
	}
	if wire.MinDatagram < wire.HeaderLen+wire.MaxSwitchKeyLen+wire.MaxSwitchValueLen {
		t.Errorf("a switch-cacheable message does not fit the smallest datagram (%d bytes)", wire.MinDatagram)
	}
}

// TestSwitchKeyBoundMatchesPlacement: the placement routes around switch
// layers exactly the keys a switch cannot cache.
func TestSwitchKeyBoundMatchesPlacement(t *testing.T) {
	if wire.MaxSwitchKeyLen != partmap.MaxSwitchKeyLen {
		t.Errorf("wire caches keys of %d bytes at a switch, the placement routes %d", wire.MaxSwitchKeyLen, partmap.MaxSwitchKeyLen)
	}
}

func TestEpoch(t *testing.T) {
	var h wire.Header
	if h.Epoch() != 0 {
		t.Fatal("a header without FlagEpoch carries an epoch")
	}
	h.SetEpoch(0x0102030405060708)
	m := &wire.Message{Header: h, Key: []byte("shop-0-0")}
	m.Op = wire.OpRenewReply
	b, err := wire.Encode(m, wire.DefaultDatagram)
	if err != nil {
		t.Fatal(err)
	}
	got, err := wire.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Epoch() != 0x0102030405060708 || !got.Has(wire.FlagEpoch) {
		t.Fatalf("decoded epoch %#x, flags %#x", got.Epoch(), got.Flags)
	}
	m.Flags |= wire.FlagTelemetry
	if _, err := wire.Encode(m, wire.DefaultDatagram); err == nil {
		t.Fatal("FlagEpoch with FlagTelemetry encoded, want an error")
	}
	b[4] |= byte(wire.FlagTelemetry)
	if _, err := wire.Decode(b); !errors.Is(err, wire.ErrFlags) {
		t.Fatalf("FlagEpoch with FlagTelemetry decoded: %v, want ErrFlags", err)
	}
}
