package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A bundle is one datagram that carries several complete datagrams to the
// same receiver, so that pipelined requests (and their replies) bound for
// one cache node or shim cost the kernel and the network one packet
// instead of one each:
//
//	offset size field
//	     0    2 magic 0xDCAC
//	     2    1 protocol version (1)
//	     3    1 op BUNDLE (0x80)
//	     4    4 zero (flags, status, key length)
//	     8   32 zero
//	    40    4 length of the records that follow, in bytes
//	    44   20 zero
//	    64    … records: a 2-byte length n, then n bytes holding one datagram
//	            exactly as it would travel alone (header, key, value
//	            fragment, and its MAC tag when it carries FlagAuth)
//
// The bundle's header has the fixed header's layout, so a switch pipeline
// parses it like any packet; its op is no request it serves, so a switch
// forwards a bundle as a miss. A bundle is not signed: each record carries
// its own tag where its op needs one (Authenticated), and the receiver
// verifies every record as if it had arrived alone. A bundle holds at least
// two records, none of them a bundle, and is no longer than the datagram
// size its sender uses.
const (
	// OpBundle is the op of a bundle datagram; Parse refuses it, SplitBundle
	// takes it.
	OpBundle Op = 0x80
	// BundleRecordPrefix is the length prefix of each record.
	BundleRecordPrefix = 2
)

// ErrBundle is wrapped by SplitBundle's errors.
var ErrBundle = errors.New("bad bundle")

// PutBundleHeader writes the header of a bundle whose records take
// recordBytes bytes (prefixes included) into b[:HeaderLen].
func PutBundleHeader(b []byte, recordBytes int) {
	clear(b[:HeaderLen])
	binary.BigEndian.PutUint16(b[0:], Magic)
	b[2] = ProtocolVersion
	b[3] = byte(OpBundle)
	binary.BigEndian.PutUint32(b[40:], uint32(recordBytes))
}

// AppendBundle appends a bundle of the given datagrams to dst.
func AppendBundle(dst []byte, datagrams ...[]byte) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, HeaderLen)...)
	for _, d := range datagrams {
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(d)))
		dst = append(dst, d...)
	}
	PutBundleHeader(dst[start:], len(dst)-start-HeaderLen)
	return dst
}

// AppendMessages appends to recs the message datagrams that datagram b
// carries: b itself, or the records of the bundle it is (SplitBundle).
func AppendMessages(recs [][]byte, b []byte) ([][]byte, error) {
	if PeekOp(b) != OpBundle {
		return append(recs, b), nil
	}
	return SplitBundle(recs, b)
}

// SplitBundle appends to recs the records of bundle b, each a datagram
// aliasing b, and returns the extended slice. It checks the header, every
// length and that no record is itself a bundle, but not the records'
// contents: Parse each. On any error it returns recs unchanged: a bundle is
// taken whole or not at all. It never panics on any input.
func SplitBundle(recs [][]byte, b []byte) ([][]byte, error) {
	if err := checkHeaderStart(b, false); err != nil {
		return recs, fmt.Errorf("cannot split bundle: %w", err)
	}
	if op := Op(b[3]); op != OpBundle {
		return recs, fmt.Errorf("cannot split bundle: %w: op %s", ErrBundle, op)
	}
	for _, f := range [...][2]int{{4, 40}, {44, 64}} {
		for _, c := range b[f[0]:f[1]] {
			if c != 0 {
				return recs, fmt.Errorf("cannot split bundle: %w: nonzero reserved header bytes", ErrBundle)
			}
		}
	}
	if n := binary.BigEndian.Uint32(b[40:]); uint64(n) != uint64(len(b)-HeaderLen) {
		return recs, fmt.Errorf("cannot split bundle: %w: records of %d bytes declared, %d present", ErrBundle, n, len(b)-HeaderLen)
	}
	start := len(recs)
	for off := HeaderLen; off < len(b); {
		if len(b)-off < BundleRecordPrefix {
			return recs[:start], fmt.Errorf("cannot split bundle: %w: record length cut at byte %d", ErrTruncated, off)
		}
		n := int(binary.BigEndian.Uint16(b[off:]))
		off += BundleRecordPrefix
		switch {
		case n < HeaderLen:
			return recs[:start], fmt.Errorf("cannot split bundle: %w: record of %d bytes, shorter than a header", ErrBundle, n)
		case n > len(b)-off:
			return recs[:start], fmt.Errorf("cannot split bundle: %w: record of %d bytes, %d present", ErrTruncated, n, len(b)-off)
		case PeekOp(b[off:off+n]) == OpBundle:
			return recs[:start], fmt.Errorf("cannot split bundle: %w: a bundle inside a bundle", ErrBundle)
		}
		recs = append(recs, b[off:off+n:off+n])
		off += n
	}
	if len(recs)-start < 2 {
		return recs[:start], fmt.Errorf("cannot split bundle: %w: %d record(s), a bundle holds at least 2", ErrBundle, len(recs)-start)
	}
	return recs, nil
}
