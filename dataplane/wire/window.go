package wire

import (
	"fmt"

	"github.com/distcache/distcache/placement/hashing"
)

// Window is how many value bytes of one message a sender sends before its
// receiver asks for more: flow control for multi-datagram messages.
//
// A value of up to MaxValueLen bytes is hundreds of datagrams. Sent in one
// burst, they overflow a receive buffer of the kernel's default size
// (net.core.rmem_default, about 200 KiB) whenever the receiver is not
// scheduled while they arrive, and every resend of the burst overflows it
// the same way: the message never completes. So a sender sends the
// fragments of a message's first Window bytes only, and keeps the message
// (for a reassembly timeout). Its receiver, once it holds every byte up to
// the end of that window, sends MORE with the offset of its first missing
// byte, and the sender sends the Window bytes from there; and so on, one
// round trip per window. A window of datagrams of the default size takes
// about 110 KiB of a receive buffer on Linux, well within the default.
//
// MORE is neither a request nor a reply: it has the message's sequence
// number, key and value length, FragOffset the offset to resume from
// (0 < FragOffset < ValueLen), and no value bytes. It is never signed: it
// changes nothing a receiver stores, and its sender gets only bytes it was
// sent already. A receiver repeats its MORE when the window it asked for
// does not arrive (Reassembler.Receive, Reassembler.AskAgain).
const Window = 64 << 10

// checkMore checks the fields of a MORE datagram with n value bytes.
func checkMore(h *Header, n uint64) error {
	switch {
	case n != 0:
		return fmt.Errorf("cannot parse packet: %w: MORE carries %d value bytes, none allowed", ErrValue, n)
	case h.Flags != 0:
		return fmt.Errorf("cannot parse packet: %w %#02x on MORE, which has none", ErrFlags, uint8(h.Flags))
	case h.ValueLen > MaxValueLen:
		return fmt.Errorf("cannot parse packet: %w: value of %d bytes, limit %d", ErrValue, h.ValueLen, MaxValueLen)
	case h.FragOffset == 0 || h.FragOffset >= h.ValueLen:
		return fmt.Errorf("cannot parse packet: %w: MORE from byte %d of a %d-byte value", ErrValue, h.FragOffset, h.ValueLen)
	}
	return nil
}

// NewMore returns the MORE that asks the sender of message (seq, key) of
// valueLen bytes for its bytes from offset from.
func NewMore(seq uint64, key []byte, valueLen, from uint32) Message {
	return Message{Header: Header{Op: OpMore, Seq: seq, ValueLen: valueLen, FragOffset: from}, Key: key}
}

// appendMore encodes MORE m: its ValueLen and FragOffset come from its
// header, and it carries no value.
func appendMore(dst []byte, m *Message, size int) ([]byte, int, error) {
	h := m.Header
	h.Flags = 0
	switch keyLen := len(m.Key); {
	case keyLen == 0 || keyLen > MaxKeyLen:
		return dst, 0, fmt.Errorf("cannot encode MORE: key of %d bytes (1…%d)", keyLen, MaxKeyLen)
	case size < MinDatagram || size > MaxDatagram:
		return dst, 0, fmt.Errorf("cannot encode MORE: datagram size %d (%d…%d)", size, MinDatagram, MaxDatagram)
	case len(m.Value) != 0 || checkMore(&h, 0) != nil:
		return dst, 0, fmt.Errorf("cannot encode MORE from byte %d of a %d-byte value with %d value bytes", h.FragOffset, h.ValueLen, len(m.Value))
	}
	if h.Digest == (hashing.Digest{}) {
		h.Digest = hashing.DigestOf(m.Key)
	}
	start := len(dst)
	dst = append(dst, make([]byte, HeaderLen)...)
	putHeader(dst[start:], &h, len(m.Key))
	return append(dst, m.Key...), 0, nil
}
