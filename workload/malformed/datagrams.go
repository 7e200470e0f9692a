// Package malformed sends bad input to every listener of a running
// cluster, as fast as it can and bounded in count and time: datagrams
// that are random, truncated, bit-flipped (with and without a valid MAC)
// or oversize at the shims' and cache nodes' data-plane ports, malformed
// RESP at the gateway, and garbage HTTP and JSON at the metrics endpoints
// and the control API. The keys of the messages it corrupts start with
// KeyPrefix, so a corrupted message that still decodes touches none of a
// checked workload's keys.
package malformed

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"

	"github.com/distcache/distcache/dataplane/wire"
)

// KeyPrefix starts every key the generated messages name.
const KeyPrefix = "malformed:"

// Kind is a class of bad datagram.
type Kind int

// Kinds of bad datagram.
const (
	Random        Kind = iota // random bytes of a random length
	Truncated                 // a valid message cut short
	Flipped                   // a valid message with 1 to 3 bits flipped, unsigned
	FlippedSigned             // a message flipped, then given a valid MAC
	SignedFlipped             // a signed message, then flipped: its MAC fails
	Oversize                  // a header that claims more than the largest datagram, padded to it
	kinds
)

var kindNames = [...]string{"random", "truncated", "flipped", "flipped-signed", "signed-flipped", "oversize"}

func (k Kind) String() string { return kindNames[k] }

// MaxUDPPayload is the largest UDP payload over IPv4.
const MaxUDPPayload = 65507

// Signer signs a datagram (a wireauth.Keyring).
type Signer interface {
	AppendTag(dst, datagram []byte) []byte
}

// datagrams makes bad datagrams; it is not safe for concurrent use.
type datagrams struct {
	rng    *rand.Rand
	signer Signer // nil: the cluster has no data-plane key
	seq    uint64
}

// valid is a well-formed message of a random op, as the data plane's
// peers send them.
func (d *datagrams) valid() wire.Message {
	d.seq++
	key := fmt.Appendf(nil, "%s%d", KeyPrefix, d.rng.IntN(1000))
	ops := [...]wire.Op{wire.OpGet, wire.OpPut, wire.OpDel, wire.OpInvalidate, wire.OpUpdate, wire.OpFetch,
		wire.OpFetchReply, wire.OpRMW, wire.OpRenew, wire.OpPing, wire.OpGetReply, wire.OpFlushAck}
	m := wire.Message{Header: wire.Header{Op: ops[d.rng.IntN(len(ops))], Seq: d.seq, MapVersion: d.rng.Uint64N(4)}, Key: key}
	switch m.Op {
	case wire.OpPut, wire.OpUpdate, wire.OpFetchReply, wire.OpGetReply:
		m.Value = make([]byte, d.rng.IntN(300))
		m.ValueVersion = d.rng.Uint64()
	case wire.OpRMW:
		m.Value = wire.AppendRMW(nil, wire.RMWIncrBy, wire.IncrByArg(d.rng.Int64N(100)))
	}
	return m
}

// encode encodes m in one datagram, signed when sign and the cluster has
// a key.
func (d *datagrams) encode(m *wire.Message, sign bool) []byte {
	var b []byte
	var err error
	if sign && d.signer != nil && wire.Authenticated(m.Op) {
		b, _, err = wire.AppendSignedDatagram(nil, m, 0, wire.DefaultDatagram, d.signer)
	} else {
		b, _, err = wire.AppendDatagram(nil, m, 0, wire.DefaultDatagram)
	}
	if err != nil {
		panic(fmt.Sprintf("cannot encode %s: %v", m.Op, err)) // the messages above always fit
	}
	return b
}

func (d *datagrams) flip(b []byte) {
	for range 1 + d.rng.IntN(3) {
		i := d.rng.IntN(len(b) * 8)
		b[i/8] ^= 1 << (i % 8)
	}
}

// next is a bad datagram of kind k.
func (d *datagrams) next(k Kind) []byte {
	switch k {
	case Random:
		b := make([]byte, d.rng.IntN(1500))
		for i := range b {
			b[i] = byte(d.rng.Uint32())
		}
		if len(b) >= 3 && d.rng.IntN(2) == 0 { // past the magic and version check
			binary.BigEndian.PutUint16(b, wire.Magic)
			b[2] = wire.ProtocolVersion
		}
		return b
	case Truncated:
		m := d.valid()
		b := d.encode(&m, true)
		return b[:d.rng.IntN(len(b))]
	case Flipped:
		m := d.valid()
		b := d.encode(&m, false)
		d.flip(b)
		return b
	case FlippedSigned:
		m := d.valid()
		b := d.encode(&m, true)
		data, _, ok := wire.Signed(b)
		if !ok || d.signer == nil {
			d.flip(b)
			return b
		}
		d.flip(data)
		return d.signer.AppendTag(data[:len(data):len(data)], data)
	case SignedFlipped:
		m := d.valid()
		b := d.encode(&m, true)
		d.flip(b)
		return b
	default: // Oversize
		m := d.valid()
		b := d.encode(&m, d.rng.IntN(2) == 0)
		binary.BigEndian.PutUint32(b[40:], uint32(wire.MaxValueLen)+uint32(d.rng.IntN(1<<20)))
		pad := make([]byte, MaxUDPPayload-len(b))
		for i := 0; i < len(pad); i += 8 {
			pad[i] = byte(d.rng.Uint32())
		}
		return append(b, pad...)
	}
}
