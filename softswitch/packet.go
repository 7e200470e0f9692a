package softswitch

import (
	"encoding/binary"
	"net/netip"

	"github.com/distcache/distcache/dataplane/wire"
)

// Offsets of distcache_h's fields (stratum_pipelines/p4src/include/headers.p4).
const (
	offOp           = 3
	offFlags        = 4
	offStatus       = 5
	offKeyLen       = 6
	offSeq          = 8
	offDigest       = 16
	offNodeID       = 32
	offNodeLoad     = 36
	offValueLen     = 40
	offFragOffset   = 44
	offValueVersion = 48
	offMapVersion   = 56
)

// Roles of a packet addressed to the switch (types.p4's ROLE_*).
const (
	roleNone uint8 = iota
	roleReads
	roleCoherence
)

// packet is one datagram in the pipeline: the IPv4 and UDP addresses the
// socket gave it, the UDP payload, and the metadata (metadata_t) the
// parser and the controls fill.
type packet struct {
	src, dst netip.AddrPort
	b        []byte // the UDP payload; the value of a hit is appended

	dc        bool // distcache_h was extracted
	cacheable bool // the key was extracted (at most 32 bytes, no MAC tag)
	valueFits bool // an UPDATE's or FETCH_REPLY's value was extracted whole
	keyLen    int  // key_len: the key's bytes follow the header

	role       uint8
	shard      uint32
	slot       uint32
	shim       netip.AddrPort
	nodeID     uint32
	mapVersion uint64
	load       uint32
	hotCount   uint16
	reply      bool // back to its sender
	toCPU      bool // to the controller (packet-in)
	drop       bool
}

// parse is the parser of p4src/v1model/parser.p4 over the UDP payload: a
// payload that starts with the magic and version and holds the fixed
// header is DistCache's; its key is extracted when it has at most
// DC_SWITCH_MAX_KEY_LEN bytes and no MAC tag, and the value of an UPDATE
// or FETCH_REPLY when it is whole and of at most DC_SWITCH_MAX_VALUE_LEN
// bytes. A payload too short for its header or key is a parser error:
// the header stays invalid (the P4 parser would leave a longer key it does
// not extract as payload; the software switch drops such a datagram).
func (p *packet) parse() {
	b := p.b
	if len(b) < wire.HeaderLen || binary.BigEndian.Uint16(b) != wire.Magic || b[2] != wire.ProtocolVersion {
		return
	}
	keyLen := int(binary.BigEndian.Uint16(b[offKeyLen:]))
	if len(b) < wire.HeaderLen+keyLen {
		return
	}
	p.dc, p.keyLen = true, keyLen
	if b[offFlags]&byte(wire.FlagAuth) != 0 || keyLen > wire.MaxSwitchKeyLen {
		return
	}
	p.cacheable = true
	op := wire.Op(b[offOp])
	valueLen := binary.BigEndian.Uint32(b[offValueLen:])
	if (op != wire.OpUpdate && op != wire.OpFetchReply) || b[offFlags]&byte(wire.FlagFragmented) != 0 || valueLen > wire.MaxSwitchValueLen {
		return
	}
	p.valueFits = len(b) >= wire.HeaderLen+keyLen+int(valueLen)
}

func (p *packet) op() wire.Op             { return wire.Op(p.b[offOp]) }
func (p *packet) setOp(op wire.Op)        { p.b[offOp] = byte(op) }
func (p *packet) flags() byte             { return p.b[offFlags] }
func (p *packet) setFlags(f byte)         { p.b[offFlags] = f }
func (p *packet) status() wire.Status     { return wire.Status(p.b[offStatus]) }
func (p *packet) setStatus(s wire.Status) { p.b[offStatus] = byte(s) }
func (p *packet) seq() uint64             { return binary.BigEndian.Uint64(p.b[offSeq:]) }
func (p *packet) setSeq(v uint64)         { binary.BigEndian.PutUint64(p.b[offSeq:], v) }
func (p *packet) digest() []byte          { return p.b[offDigest : offDigest+16] }
func (p *packet) telemetry() (node, load uint32) {
	return binary.BigEndian.Uint32(p.b[offNodeID:]), binary.BigEndian.Uint32(p.b[offNodeLoad:])
}
func (p *packet) valueLen() uint32     { return binary.BigEndian.Uint32(p.b[offValueLen:]) }
func (p *packet) valueVersion() uint64 { return binary.BigEndian.Uint64(p.b[offValueVersion:]) }
func (p *packet) setValueVersion(v uint64) {
	binary.BigEndian.PutUint64(p.b[offValueVersion:], v)
}

// value is the extracted value (valueFits).
func (p *packet) value() []byte {
	start := wire.HeaderLen + p.keyLen
	return p.b[start : start+int(p.valueLen())]
}

// digestWord is the 16-bit slice key_digest[16i+15:16i], i counted from
// the digest's least significant end, as the sketch and Bloom filter
// index it.
func (p *packet) digestWord(i int) uint32 {
	d := p.digest()
	return uint32(binary.BigEndian.Uint16(d[14-2*i:]))
}

// reflect turns the packet into its receiver's answer of op (the
// action reflect).
func (p *packet) reflect(op wire.Op) {
	p.src, p.dst = p.dst, p.src
	p.setOp(op)
	p.setStatus(wire.StatusOK)
	p.reply = true
}

// setValue makes the datagram the header, the key and value (a hit's
// value, or none: set_lengths and drop_value).
func (p *packet) setValue(value []byte) {
	p.b = append(p.b[:wire.HeaderLen+p.keyLen], value...)
	binary.BigEndian.PutUint32(p.b[offValueLen:], uint32(len(value)))
	binary.BigEndian.PutUint32(p.b[offFragOffset:], 0)
}

// stamp fills the telemetry: the member id, load and map version.
func (p *packet) stamp() {
	p.b[offFlags] |= byte(wire.FlagTelemetry)
	binary.BigEndian.PutUint32(p.b[offNodeID:], p.nodeID)
	binary.BigEndian.PutUint32(p.b[offNodeLoad:], p.load)
	binary.BigEndian.PutUint64(p.b[offMapVersion:], p.mapVersion)
}

// sendFromReadPort: the packet leaves by the read port it came in on,
// to dst (the action send_from_read_port).
func (p *packet) sendFromReadPort(dst netip.AddrPort) {
	p.src, p.dst = p.dst, dst
}
