package wire

import (
	"fmt"

	"github.com/distcache/distcache/placement/hashing"
)

// Message is a whole request or reply: header, key and the complete value.
type Message struct {
	Header
	Key   []byte
	Value []byte
}

// FragmentCapacity is the number of value bytes a datagram of size bytes
// carries for a key of keyLen bytes.
func FragmentCapacity(size, keyLen int) int { return size - HeaderLen - keyLen }

// FragmentStart is the offset of the fragment that holds value byte off of
// a message with a key of keyLen bytes, sent in datagrams of size bytes
// that end with trailer bytes after the value (Trailer): where its sender
// resumes it for a MORE (see Window).
func FragmentStart(off, size, keyLen, trailer int) int {
	return off - off%(FragmentCapacity(size, keyLen)-trailer)
}

// Signer appends the TagLen-byte MAC of datagram to dst. The data-plane
// key ring (package wireauth) is one.
type Signer interface {
	AppendTag(dst, datagram []byte) []byte
}

// Datagrams is the number of datagrams of size bytes that carry m.
func Datagrams(m *Message, size int) int {
	c := FragmentCapacity(size, len(m.Key))
	if c <= 0 || len(m.Value) <= c {
		return 1
	}
	return (len(m.Value) + c - 1) / c
}

// AppendDatagram appends to dst the datagram of m that carries the value
// bytes from off, for datagrams of at most size bytes, and returns the
// extended slice and the offset of the next fragment: len(m.Value) after the
// last one. A message whose value fits one datagram is one datagram (call
// with off 0). It sets the digest from the key when m.Digest is zero, and
// FlagFragmented when the value needs more than one datagram. A MORE (see
// Window) carries no value: its ValueLen and FragOffset are m's, and off is
// ignored.
func AppendDatagram(dst []byte, m *Message, off, size int) ([]byte, int, error) {
	return appendDatagram(dst, m, off, size, nil, nil)
}

// AppendSignedDatagram is AppendDatagram for a datagram that s
// authenticates: it sets FlagAuth and ends the datagram, still at most
// size bytes, with s's tag of every byte before it, so each fragment
// carries TagLen fewer value bytes. Every fragment is signed on its own: a
// receiver verifies each before reassembly.
func AppendSignedDatagram(dst []byte, m *Message, off, size int, s Signer) ([]byte, int, error) {
	return appendDatagram(dst, m, off, size, s, nil)
}

// appendDatagram encodes a datagram, signed by s when s is not nil, and
// stamped with st when both are not nil.
func appendDatagram(dst []byte, m *Message, off, size int, s Signer, st *Stamp) ([]byte, int, error) {
	if m.Op == OpMore {
		return appendMore(dst, m, size)
	}
	keyLen := len(m.Key)
	switch {
	case keyLen == 0 || keyLen > MaxKeyLen:
		return dst, off, fmt.Errorf("cannot encode %s: key of %d bytes (1…%d)", m.Op, keyLen, MaxKeyLen)
	case m.Has(FlagEpoch | FlagTelemetry):
		return dst, off, fmt.Errorf("cannot encode %s: FlagEpoch and FlagTelemetry share NodeID and Load", m.Op)
	case len(m.Value) > MaxValueLen:
		return dst, off, fmt.Errorf("cannot encode %s: value of %d bytes over the limit of %d", m.Op, len(m.Value), MaxValueLen)
	case size < MinDatagram || size > MaxDatagram:
		return dst, off, fmt.Errorf("cannot encode %s: datagram size %d (%d…%d)", m.Op, size, MinDatagram, MaxDatagram)
	case off < 0 || off > len(m.Value) || (off == len(m.Value) && off != 0):
		return dst, off, fmt.Errorf("cannot encode %s: fragment offset %d of a %d-byte value", m.Op, off, len(m.Value))
	}
	if s == nil {
		st = nil
	}
	capacity := FragmentCapacity(size, keyLen) - Trailer(s != nil, st != nil)
	h := m.Header
	h.Flags &^= FlagAuth
	if s != nil {
		h.Flags |= FlagAuth
	}
	if off != 0 && len(m.Value) <= capacity {
		return dst, off, fmt.Errorf("cannot encode %s: fragment offset %d of a value that fits one datagram", m.Op, off)
	}
	if h.Digest == (hashing.Digest{}) {
		h.Digest = hashing.DigestOf(m.Key)
	}
	end := min(off+capacity, len(m.Value))
	h.Flags &^= FlagFragmented
	if len(m.Value) > capacity {
		h.Flags |= FlagFragmented
	}
	h.ValueLen = uint32(len(m.Value))
	h.FragOffset = uint32(off)
	start := len(dst)
	dst = append(dst, make([]byte, HeaderLen)...)
	putHeader(dst[start:], &h, keyLen)
	dst = append(dst, m.Key...)
	dst = append(dst, m.Value[off:end]...)
	if st != nil {
		dst[start+2] = StampedVersion
		n := len(dst)
		dst = append(dst, make([]byte, StampLen)...)
		putStamp(dst[n:], st)
	}
	if s != nil {
		dst = s.AppendTag(dst, dst[start:])
	}
	return dst, end, nil
}

// Encode returns m as a single datagram of at most size bytes; it fails when
// the value needs more than one.
func Encode(m *Message, size int) ([]byte, error) {
	if Datagrams(m, size) > 1 {
		return nil, fmt.Errorf("cannot encode %s as one datagram: %d-byte value over %d bytes", m.Op, len(m.Value), FragmentCapacity(size, len(m.Key)))
	}
	b, _, err := AppendDatagram(make([]byte, 0, HeaderLen+len(m.Key)+len(m.Value)), m, 0, size)
	return b, err
}

// Decode parses one unfragmented datagram into a Message whose Key and
// Value alias b.
func Decode(b []byte) (Message, error) {
	p, err := Parse(b)
	if err != nil {
		return Message{}, err
	}
	if !p.Complete() {
		return Message{}, fmt.Errorf("cannot decode message: %w: fragment at %d of a %d-byte value", ErrValue, p.FragOffset, p.ValueLen)
	}
	return Message{Header: p.Header, Key: p.Key, Value: p.Fragment}, nil
}
