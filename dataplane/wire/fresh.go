package wire

import (
	"encoding/binary"
)

// Freshness: a signed datagram of version StampedVersion carries, between
// its value bytes and its tag, a stamp that makes it unique and orders it
// among its sender's datagrams, so that a receiver can refuse one it has
// seen (package antireplay):
//
//	offset from the stamp's start
//	     0    8 sender: who signed it (stable across a process's restarts
//	              where the process has a name, random otherwise)
//	     8    8 epoch: the sender's start, Unix nanoseconds
//	    16    8 sequence number: 1, 2, … within the epoch, one per datagram
//	    24    8 time the datagram was signed, Unix nanoseconds
//
// The tag covers the stamp. The header keeps its layout; only the
// version byte says that the stamp is there, so a switch's parser, which
// matches version 1, treats such a datagram as plain UDP (switches never
// get signed datagrams). An unsigned datagram is always version 1.
const (
	// StampedVersion is the version byte of a signed datagram that
	// carries a Stamp.
	StampedVersion uint8 = 2
	// StampLen is the length of a Stamp on the wire.
	StampLen = 32
)

// Stamp is the freshness a StampedVersion datagram carries.
type Stamp struct {
	Sender uint64
	Epoch  uint64
	Seq    uint64
	Time   int64
}

// Trailer is the number of bytes a datagram carries after its value
// bytes: a tag when signed, and a stamp before it when stamped.
func Trailer(signed, stamped bool) int {
	switch {
	case stamped:
		return StampLen + TagLen
	case signed:
		return TagLen
	}
	return 0
}

func putStamp(b []byte, s *Stamp) {
	binary.BigEndian.PutUint64(b[0:], s.Sender)
	binary.BigEndian.PutUint64(b[8:], s.Epoch)
	binary.BigEndian.PutUint64(b[16:], s.Seq)
	binary.BigEndian.PutUint64(b[24:], uint64(s.Time))
}

func readStamp(b []byte) Stamp {
	return Stamp{
		Sender: binary.BigEndian.Uint64(b[0:]),
		Epoch:  binary.BigEndian.Uint64(b[8:]),
		Seq:    binary.BigEndian.Uint64(b[16:]),
		Time:   int64(binary.BigEndian.Uint64(b[24:])),
	}
}

// AppendStampedDatagram is AppendSignedDatagram for a datagram that also
// carries stamp st: version StampedVersion, the stamp after the value
// bytes, and s's tag of every byte before it, still at most size bytes.
func AppendStampedDatagram(dst []byte, m *Message, off, size int, s Signer, st *Stamp) ([]byte, int, error) {
	return appendDatagram(dst, m, off, size, s, st)
}
