package pipelines

import (
	"bytes"
	"math/big"
	"os"
	"strings"
	"testing"

	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/placement/hashing"
)

const headersFile = "p4src/include/headers.p4"

func parseFile(t *testing.T, path string) Decls {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Parse(string(src))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// bitsAt is the big-endian integer of width bits at bit offset off of b.
func bitsAt(b []byte, off, width int) *big.Int {
	v := new(big.Int)
	for i := off; i < off+width; i++ {
		bit := (b[i/8] >> (7 - i%8)) & 1
		v.Lsh(v, 1)
		v.Or(v, big.NewInt(int64(bit)))
	}
	return v
}

// TestDistcacheHeaderMatchesTheWire encodes a datagram with the Go encoder
// — a middle fragment of a reply, every field set to a distinct value —
// and reads each field of distcache_h from its bytes at the offset and
// width the P4 header gives it: every field must read what the encoder
// wrote, and every header field of the wire must be in the P4 header.
func TestDistcacheHeaderMatchesTheWire(t *testing.T) {
	h, ok := parseFile(t, headersFile).Headers["distcache_h"]
	if !ok {
		t.Fatalf("%s declares no distcache_h", headersFile)
	}
	if h.Bits() != wire.HeaderLen*8 {
		t.Fatalf("distcache_h is %d bits, the wire's header %d bytes", h.Bits(), wire.HeaderLen)
	}
	key := []byte("user:42:cart")
	m := &wire.Message{
		Header: wire.Header{
			Op: wire.OpFetchReply, Flags: wire.FlagTelemetry | wire.FlagTracked, Status: wire.StatusUncacheable,
			Seq: 0x0102030405060708, NodeID: 0x0a0b0c0d, Load: 0x11121314,
			ValueVersion: 0x2122232425262728, MapVersion: 0x3132333435363738,
		},
		Key:   key,
		Value: bytes.Repeat([]byte{0xee}, 3000),
	}
	const size, frag = 1000, 1000 - wire.HeaderLen - 12 // 12: len(key)
	b, next, err := wire.AppendDatagram(nil, m, frag, size)
	if err != nil || next != 2*frag {
		t.Fatalf("encode the second fragment: next %d, %v", next, err)
	}
	digest := hashing.DigestOf(key)
	want := map[string]*big.Int{
		"magic":         big.NewInt(int64(wire.Magic)),
		"version":       big.NewInt(int64(wire.ProtocolVersion)),
		"op":            big.NewInt(int64(wire.OpFetchReply)),
		"flags":         big.NewInt(int64(wire.FlagTelemetry | wire.FlagTracked | wire.FlagFragmented)),
		"status":        big.NewInt(int64(wire.StatusUncacheable)),
		"key_len":       big.NewInt(int64(len(key))),
		"seq":           new(big.Int).SetUint64(m.Seq),
		"key_digest":    new(big.Int).SetBytes(digest[:]),
		"node_id":       big.NewInt(int64(m.NodeID)),
		"node_load":     big.NewInt(int64(m.Load)),
		"value_len":     big.NewInt(3000),
		"frag_offset":   big.NewInt(frag),
		"value_version": new(big.Int).SetUint64(m.ValueVersion),
		"map_version":   new(big.Int).SetUint64(m.MapVersion),
	}
	for _, f := range h.Fields {
		off, _ := h.Offset(f.Name)
		w, ok := want[f.Name]
		if !ok {
			t.Errorf("distcache_h.%s (bits %d…%d) is no field of the wire's header", f.Name, off, off+f.Bits-1)
			continue
		}
		delete(want, f.Name)
		if got := bitsAt(b, off, f.Bits); got.Cmp(w) != 0 {
			t.Errorf("distcache_h.%s at bit %d (%d bits) reads %#x, the encoder wrote %#x", f.Name, off, f.Bits, got, w)
		}
	}
	for name := range want {
		t.Errorf("the wire's header field %s is not in distcache_h", name)
	}
}

// TestConstantsMatchTheWire: every op, flag and status the P4 sources name,
// and the bounds of what a switch caches, have the Go value, and every op
// the wire knows has a P4 constant.
func TestConstantsMatchTheWire(t *testing.T) {
	consts := parseFile(t, headersFile).Consts
	want := map[string]uint64{
		"DC_MAGIC": uint64(wire.Magic), "DC_VERSION": uint64(wire.ProtocolVersion),
		"DC_OP_BUNDLE":            uint64(wire.OpBundle),
		"DC_FLAG_HIT":             uint64(wire.FlagHit),
		"DC_FLAG_TELEMETRY":       uint64(wire.FlagTelemetry),
		"DC_FLAG_FRAGMENTED":      uint64(wire.FlagFragmented),
		"DC_FLAG_DIRECT":          uint64(wire.FlagDirect),
		"DC_FLAG_TRACKED":         uint64(wire.FlagTracked),
		"DC_FLAG_CACHE_ONLY":      uint64(wire.FlagCacheOnly),
		"DC_FLAG_AUTH":            uint64(wire.FlagAuth),
		"DC_SWITCH_MAX_KEY_LEN":   wire.MaxSwitchKeyLen,
		"DC_SWITCH_MAX_VALUE_LEN": wire.MaxSwitchValueLen,
		"DC_STATUS_OK":            uint64(wire.StatusOK),
		"DC_STATUS_NOT_FOUND":     uint64(wire.StatusNotFound),
		"DC_STATUS_UNAVAILABLE":   uint64(wire.StatusUnavailable),
	}
	for op := wire.Op(1); op <= wire.MaxOp; op++ {
		want["DC_OP_"+op.String()] = uint64(op)
	}
	for name, v := range want {
		c, ok := consts[name]
		switch {
		case !ok:
			t.Errorf("%s declares no %s (the Go value is %d)", headersFile, name, v)
		case c.Value != v:
			t.Errorf("%s = %d, the Go value is %d", name, c.Value, v)
		}
	}
	for name := range consts {
		if _, ok := want[name]; !ok && strings.HasPrefix(name, "DC_") {
			t.Errorf("%s has no Go counterpart this test knows", name)
		}
	}
}
