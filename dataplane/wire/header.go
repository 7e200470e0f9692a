package wire

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/distcache/distcache/placement/hashing"
)

// Layout constants.
const (
	// Magic opens every packet.
	Magic uint16 = 0xDCAC
	// ProtocolVersion is the version this package speaks.
	ProtocolVersion uint8 = 1
	// HeaderLen is the length of the fixed header.
	HeaderLen = 64
	// MaxKeyLen bounds a key.
	MaxKeyLen = 512
	// MaxValueLen bounds a value (all fragments together).
	MaxValueLen = 1 << 20
	// MaxDatagram is the largest UDP payload over IPv4.
	MaxDatagram = 65507
	// DefaultDatagram is the default datagram size: an Ethernet MTU of 1500
	// less the IPv4 and UDP headers, so that switches see unfragmented IP.
	DefaultDatagram = 1472
	// MinDatagram is the smallest datagram size that fits a header, the
	// longest key and some value bytes.
	MinDatagram = HeaderLen + MaxKeyLen + 64
)

// Op is a packet's operation.
type Op uint8

// Ops. A reply's op is its request's op + 1.
const (
	OpGet           Op = 1  // read a key
	OpGetReply      Op = 2  // value (Status OK, FlagHit if from a cache) or a miss
	OpPut           Op = 3  // write a key (to its storage shim)
	OpPutReply      Op = 4  // write acknowledged (after phase 1 and the Redis write)
	OpDel           Op = 5  // delete a key (to its storage shim)
	OpDelReply      Op = 6  // delete acknowledged
	OpInvalidate    Op = 7  // coherence phase 1: invalidate a cached copy
	OpInvalidateAck Op = 8  // copy invalid (FlagHit), or not cached
	OpUpdate        Op = 9  // coherence phase 2: new value for a cached copy
	OpUpdateAck     Op = 10 // update applied or ignored
	OpFetch         Op = 11 // cache insertion: ask the shim for the value
	OpFetchReply    Op = 12 // the fill: value and version, serialised with writes
	OpPing          Op = 13 // liveness probe
	OpPong          Op = 14 // liveness answer, with telemetry
	OpRMW           Op = 15 // read-modify-write a key at its storage shim (Value: an RMW request, see rmw.go)
	OpRMWReply      Op = 16 // the RMW's result (Value), after phase 1 and the Redis update
	OpMore          Op = 17 // flow control: send the next window of a multi-datagram message (see Window)
	// OpFlush asks a cache node to drop every entry of the storage shard
	// named by Key: a shim that starts knows none of the copies an
	// earlier run of it handed out (shim/holders.go).
	OpFlush    Op = 18
	OpFlushAck Op = 19 // the shard's entries are gone
	// OpRenew asks a storage shim for a serving lease on the keys of the
	// shard named by Key (package lease). The node keeps the time it sent
	// it: the lease runs from then. A switch never sees it.
	OpRenew Op = 20
	// OpRenewReply grants the lease, with FlagEpoch: the node's epoch;
	// ValueVersion is the lease's length in nanoseconds.
	OpRenewReply Op = 21
	opLimit      Op = 22
	// MaxOp is the largest op Parse accepts, for tables indexed by op.
	MaxOp = opLimit - 1
)

var opNames = [...]string{
	"", "GET", "GET_REPLY", "PUT", "PUT_REPLY", "DEL", "DEL_REPLY",
	"INVALIDATE", "INVALIDATE_ACK", "UPDATE", "UPDATE_ACK", "FETCH",
	"FETCH_REPLY", "PING", "PONG", "RMW", "RMW_REPLY", "MORE", "FLUSH", "FLUSH_ACK",
	"RENEW", "RENEW_REPLY",
}

func (o Op) String() string {
	if o > 0 && o < opLimit {
		return opNames[o]
	}
	if o == OpBundle {
		return "BUNDLE"
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// IsReply reports whether o answers a request. MORE is neither: the
// transport serves it (see Window). A request's op is odd below MORE and
// even above it.
func (o Op) IsReply() bool {
	switch {
	case o > 0 && o < OpMore:
		return o%2 == 0
	case o > OpMore && o < opLimit:
		return o%2 == 1
	}
	return false
}

// IsWrite reports whether o is a client's write request: PUT, DEL or RMW.
func (o Op) IsWrite() bool { return o == OpPut || o == OpDel || o == OpRMW }

// Reply returns the op that answers o.
func (o Op) Reply() Op { return o + 1 }

// Flag is a bit in the flags byte.
type Flag uint8

// Flags.
const (
	// FlagHit marks a GET_REPLY served from a cache node's copy, and an
	// INVALIDATE_ACK from a node that held an entry for the key (a valid
	// copy or a placeholder being filled): the write has a copy to
	// invalidate and update, which costs the shim coherence work; on a
	// DEL_REPLY it says the deleted key existed (Redis DEL's count).
	FlagHit Flag = 1 << 0
	// FlagTelemetry marks valid node id and load fields.
	FlagTelemetry Flag = 1 << 1
	// FlagFragmented marks a message whose value spans several datagrams.
	FlagFragmented Flag = 1 << 2
	// FlagDirect marks a GET a client sent straight to the storage shim
	// (no cache layer on the path). On a client's GET to a cache node it
	// says that the client reads storage itself (Shard.Redis in the map):
	// the node answers a miss at once with StatusUnavailable and
	// FlagDirect instead of reading the shim for it. A node older than
	// this meaning reads the shim as for any GET.
	FlagDirect Flag = 1 << 3
	// FlagTracked marks a storage shim's GET_REPLY to a cache node that
	// the shim read while no write of the key was in progress and while
	// every later write of the key invalidates that node first: readers
	// that joined the node's backend read after it left may take the
	// reply (CableCache's coalescing, made safe across map changes).
	FlagTracked Flag = 1 << 4
	// FlagCacheOnly marks a client's hedged GET to a cache node: answer it
	// from a valid copy (FlagHit), or refuse it with StatusUnavailable
	// without reading the backend, so a hedge never adds storage load.
	FlagCacheOnly Flag = 1 << 5
	// FlagFirst marks the first datagram of a client's write request (PUT,
	// DEL, RMW) to a storage shim: no datagram of the request went out
	// before it, so no shim can have applied it, and the shim need not
	// look for the request's applied mark in Redis. The transport clears
	// it on every retransmission. It shares its bit with FlagCacheOnly,
	// whose meaning is a GET's; a shim older than this meaning ignores it.
	FlagFirst = FlagCacheOnly
	// FlagAuth marks a datagram that ends with a TagLen-byte MAC of every
	// byte before it (header, key, value bytes): see Authenticated and
	// AppendSignedDatagram. Parse strips the tag; Signed returns it.
	FlagAuth Flag = 1 << 6
	// FlagEpoch marks a shim's RENEW_REPLY, UPDATE or FETCH_REPLY whose
	// NodeID (high 32 bits) and Load (low 32 bits) hold the shim's epoch
	// for the receiving node (package lease; Header.Epoch). It never goes
	// with FlagTelemetry, which uses the same fields. A node older than
	// this flag refuses the datagram, so a shim sets it only towards nodes
	// that renewed a lease with it.
	FlagEpoch Flag = 1 << 7
	flagMask       = FlagHit | FlagTelemetry | FlagFragmented | FlagDirect | FlagTracked | FlagCacheOnly | FlagAuth | FlagEpoch
)

// TagLen is the length of the MAC tag a FlagAuth datagram ends with.
const TagLen = 16

// Authenticated reports whether op changes what a receiver stores or
// serves — a write, a coherence message or a cache fill (PUT, DEL,
// INVALIDATE, UPDATE, FETCH, RMW, FLUSH and their replies) — and so must
// carry a MAC (FlagAuth) where the cluster has a data-plane key. GET,
// GET_REPLY, PING and PONG never do: the hit path pays nothing for
// authentication.
func Authenticated(op Op) bool {
	return op >= OpPut && op <= OpFetchReply || op == OpRMW || op == OpRMWReply || op == OpFlush || op == OpFlushAck ||
		op == OpRenew || op == OpRenewReply
}

// Status is a reply's outcome.
type Status uint8

// Statuses.
const (
	StatusOK          Status = 0 // done; GET_REPLY carries the value
	StatusNotFound    Status = 1 // the key does not exist
	StatusNotOwner    Status = 2 // the receiver does not own the key under its map
	StatusUnavailable Status = 3 // the storage backend (Redis) cannot be reached
	StatusCoherence   Status = 4 // phase 1 not acknowledged in time; nothing written
	StatusTooLarge    Status = 5 // key or value over the limits
	StatusOverloaded  Status = 6 // the receiver sheds load
	StatusInternal    Status = 7 // any other failure
	// StatusInvalid: the stored value does not allow the RMW (not an
	// integer, or the result overflows); nothing written.
	StatusInvalid Status = 8
	// StatusUncacheable: FETCH_REPLY of a key with an expiry, which no
	// cache may hold (it could outlive the expiry); nothing filled.
	StatusUncacheable Status = 9
	// StatusWrongType: the key holds a value of another type than the
	// operation's (a GET or an increment of a hash); nothing read or
	// written.
	StatusWrongType Status = 10
	statusLimit     Status = 11
)

var statusNames = [...]string{
	"ok", "not_found", "not_owner", "unavailable", "coherence_timeout",
	"too_large", "overloaded", "internal", "invalid", "uncacheable", "wrong_type",
}

func (s Status) String() string {
	if s < statusLimit {
		return statusNames[s]
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// Header is the fixed part of a packet. ValueLen and FragOffset are set by
// the encoder; a decoded Header carries what the packet said.
type Header struct {
	Op           Op
	Flags        Flag
	Status       Status
	Seq          uint64
	Digest       hashing.Digest
	NodeID       uint32
	Load         uint32
	ValueLen     uint32
	FragOffset   uint32
	ValueVersion uint64
	MapVersion   uint64
}

// Has reports whether all of f are set.
func (h *Header) Has(f Flag) bool { return h.Flags&f == f }

// Epoch is the shim's epoch a FlagEpoch header carries, 0 without it.
func (h *Header) Epoch() uint64 {
	if !h.Has(FlagEpoch) {
		return 0
	}
	return uint64(h.NodeID)<<32 | uint64(h.Load)
}

// SetEpoch sets FlagEpoch and the epoch e in NodeID and Load.
func (h *Header) SetEpoch(e uint64) {
	h.Flags |= FlagEpoch
	h.NodeID, h.Load = uint32(e>>32), uint32(e)
}

// Errors wrapped by Parse.
var (
	ErrTruncated = errors.New("truncated packet")
	ErrMagic     = errors.New("bad magic")
	ErrVersion   = errors.New("unsupported protocol version")
	ErrOp        = errors.New("unknown op")
	ErrFlags     = errors.New("unknown flags")
	ErrStatus    = errors.New("unknown status")
	ErrKey       = errors.New("bad key length")
	ErrDigest    = errors.New("key digest mismatch")
	ErrValue     = errors.New("bad value length or fragment")
)

// Packet is one decoded datagram. Key and Fragment alias the datagram.
type Packet struct {
	Header
	// Stamped says that the datagram carried Stamp (version
	// StampedVersion, always signed).
	Stamped bool
	Stamp   Stamp
	Key     []byte
	// Fragment is the value bytes this datagram carries, starting at
	// Header.FragOffset; the whole value when the message is not
	// fragmented.
	Fragment []byte
}

// Complete reports whether the packet carries its whole value.
func (p *Packet) Complete() bool {
	return p.FragOffset == 0 && uint32(len(p.Fragment)) == p.ValueLen
}

// PeekOp returns the op of datagram b without decoding the rest: 0 when b
// is too short for a header or has another magic or a version other than
// ProtocolVersion and StampedVersion. It
// checks nothing else — Parse decides whether the datagram is valid — so a
// reader can order the datagrams it received by op before it parses them.
func PeekOp(b []byte) Op {
	if len(b) < HeaderLen || binary.BigEndian.Uint16(b[0:]) != Magic || b[2] != ProtocolVersion && b[2] != StampedVersion {
		return 0
	}
	return Op(b[3])
}

// checkHeaderStart checks that b holds a header of this protocol's magic
// and version, as every datagram and bundle does; stamped allows
// StampedVersion too (a datagram, never a bundle).
func checkHeaderStart(b []byte, stamped bool) error {
	if len(b) < HeaderLen {
		return fmt.Errorf("%w: %d bytes, header is %d", ErrTruncated, len(b), HeaderLen)
	}
	if m := binary.BigEndian.Uint16(b[0:]); m != Magic {
		return fmt.Errorf("%w %#04x", ErrMagic, m)
	}
	if v := b[2]; v != ProtocolVersion && (!stamped || v != StampedVersion) {
		return fmt.Errorf("%w %d", ErrVersion, v)
	}
	return nil
}

// Parse decodes one datagram. It checks every field, the key digest and that
// the fragment lies within the value; it never panics on any input.
func Parse(b []byte) (Packet, error) {
	var p Packet
	if err := checkHeaderStart(b, true); err != nil {
		return p, fmt.Errorf("cannot parse packet: %w", err)
	}
	stamped := b[2] == StampedVersion
	h := &p.Header
	h.Op, h.Flags, h.Status = Op(b[3]), Flag(b[4]), Status(b[5])
	if h.Op == OpBundle {
		return p, fmt.Errorf("cannot parse packet: %w: a bundle (SplitBundle takes it)", ErrOp)
	}
	if h.Op == 0 || h.Op >= opLimit {
		return p, fmt.Errorf("cannot parse packet: %w %d", ErrOp, b[3])
	}
	if h.Flags&^flagMask != 0 || h.Has(FlagEpoch|FlagTelemetry) {
		return p, fmt.Errorf("cannot parse packet: %w %#02x", ErrFlags, b[4])
	}
	if stamped && !h.Has(FlagAuth) {
		return p, fmt.Errorf("cannot parse packet: %w %d without FlagAuth", ErrVersion, StampedVersion)
	}
	if h.Status >= statusLimit {
		return p, fmt.Errorf("cannot parse packet: %w %d", ErrStatus, b[5])
	}
	keyLen := int(binary.BigEndian.Uint16(b[6:]))
	h.Seq = binary.BigEndian.Uint64(b[8:])
	copy(h.Digest[:], b[16:32])
	h.NodeID = binary.BigEndian.Uint32(b[32:])
	h.Load = binary.BigEndian.Uint32(b[36:])
	h.ValueLen = binary.BigEndian.Uint32(b[40:])
	h.FragOffset = binary.BigEndian.Uint32(b[44:])
	h.ValueVersion = binary.BigEndian.Uint64(b[48:])
	h.MapVersion = binary.BigEndian.Uint64(b[56:])
	if keyLen == 0 || keyLen > MaxKeyLen {
		return p, fmt.Errorf("cannot parse packet: %w %d (1…%d)", ErrKey, keyLen, MaxKeyLen)
	}
	if len(b) < HeaderLen+keyLen {
		return p, fmt.Errorf("cannot parse packet: %w: key of %d bytes, %d present", ErrTruncated, keyLen, len(b)-HeaderLen)
	}
	p.Key = b[HeaderLen : HeaderLen+keyLen : HeaderLen+keyLen]
	if hashing.DigestOf(p.Key) != h.Digest {
		return p, fmt.Errorf("cannot parse packet: %w", ErrDigest)
	}
	end := len(b)
	if h.Has(FlagAuth) {
		trailer := Trailer(true, stamped)
		if end < HeaderLen+keyLen+trailer {
			return p, fmt.Errorf("cannot parse packet: %w: no room for the %d-byte trailer", ErrTruncated, trailer)
		}
		end -= trailer
		if stamped {
			p.Stamped, p.Stamp = true, readStamp(b[end:])
		}
	}
	p.Fragment = b[HeaderLen+keyLen : end : end]
	n := uint64(len(p.Fragment))
	switch {
	case h.Op == OpMore:
		return p, checkMore(h, n)
	case h.ValueLen > MaxValueLen:
		return p, fmt.Errorf("cannot parse packet: %w: value of %d bytes, limit %d", ErrValue, h.ValueLen, MaxValueLen)
	case uint64(h.FragOffset)+n > uint64(h.ValueLen):
		return p, fmt.Errorf("cannot parse packet: %w: bytes [%d, %d) outside a value of %d", ErrValue, h.FragOffset, uint64(h.FragOffset)+n, h.ValueLen)
	case !h.Has(FlagFragmented) && (h.FragOffset != 0 || n != uint64(h.ValueLen)):
		return p, fmt.Errorf("cannot parse packet: %w: unfragmented packet carries %d of %d bytes", ErrValue, n, h.ValueLen)
	case h.Has(FlagFragmented) && n == 0:
		return p, fmt.Errorf("cannot parse packet: %w: empty fragment", ErrValue)
	case h.Has(FlagFragmented) && h.FragOffset == 0 && n == uint64(h.ValueLen):
		return p, fmt.Errorf("cannot parse packet: %w: fragmented flag on a complete value", ErrValue)
	}
	return p, nil
}

// Signed splits datagram b, which Parse accepted, into the bytes its MAC
// covers and the tag; ok is false when b does not carry FlagAuth.
func Signed(b []byte) (data, tag []byte, ok bool) {
	if len(b) < HeaderLen+TagLen || Flag(b[4])&FlagAuth == 0 {
		return nil, nil, false
	}
	n := len(b) - TagLen
	return b[:n:n], b[n:], true
}

// putHeader writes h (with key length keyLen) into b[:HeaderLen].
func putHeader(b []byte, h *Header, keyLen int) {
	binary.BigEndian.PutUint16(b[0:], Magic)
	b[2] = ProtocolVersion
	b[3] = byte(h.Op)
	b[4] = byte(h.Flags)
	b[5] = byte(h.Status)
	binary.BigEndian.PutUint16(b[6:], uint16(keyLen))
	binary.BigEndian.PutUint64(b[8:], h.Seq)
	copy(b[16:32], h.Digest[:])
	binary.BigEndian.PutUint32(b[32:], h.NodeID)
	binary.BigEndian.PutUint32(b[36:], h.Load)
	binary.BigEndian.PutUint32(b[40:], h.ValueLen)
	binary.BigEndian.PutUint32(b[44:], h.FragOffset)
	binary.BigEndian.PutUint64(b[48:], h.ValueVersion)
	binary.BigEndian.PutUint64(b[56:], h.MapVersion)
}
