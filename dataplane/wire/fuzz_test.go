package wire_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/placement/hashing"
)

var parseErrors = []error{
	wire.ErrTruncated, wire.ErrMagic, wire.ErrVersion, wire.ErrOp, wire.ErrFlags,
	wire.ErrStatus, wire.ErrKey, wire.ErrDigest, wire.ErrValue,
}

// matches is how many of errs err wraps: a decoder's error names exactly
// one of its package's errors.
func matches(err error, errs []error) int {
	n := 0
	for _, e := range errs {
		if errors.Is(err, e) {
			n++
		}
	}
	return n
}

// goldenData returns the datagrams of the golden files, in name order.
func goldenData(f testing.TB) [][]byte {
	var out [][]byte
	for _, path := range goldenFiles(f) {
		b, err := readGolden(path)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// stampedSeeds are stamped datagrams, whole and fragmented, for the
// fuzz targets' corpora.
func stampedSeeds(f testing.TB) [][]byte {
	st := wire.Stamp{Sender: 0xA1, Epoch: 1_800_000_000_000_000_000, Seq: 7, Time: 1_800_000_000_500_000_000}
	var out [][]byte
	for _, m := range []wire.Message{
		{Header: wire.Header{Op: wire.OpUpdate, Seq: 9, ValueVersion: 3}, Key: []byte("k"), Value: []byte("v")},
		{Header: wire.Header{Op: wire.OpPut, Seq: 9}, Key: []byte("k"), Value: make([]byte, 3000)},
	} {
		b, _, err := wire.AppendStampedDatagram(nil, &m, 0, wire.MinDatagram, sameTag(make([]byte, wire.TagLen)), &st)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

func FuzzParse(f *testing.F) {
	for _, b := range append(goldenData(f), stampedSeeds(f)...) {
		f.Add(b)
		keyEnd := wire.HeaderLen + int(binary.BigEndian.Uint16(b[6:]))
		for _, n := range []int{0, 1, wire.HeaderLen - 1, wire.HeaderLen, keyEnd - 1, keyEnd, len(b) - 1} {
			if n >= 0 && n < len(b) {
				f.Add(b[:n])
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		in := bytes.Clone(b)
		p, err := wire.Parse(b)
		if !bytes.Equal(in, b) {
			t.Fatal("Parse changed its input")
		}
		if err != nil {
			if matched := matches(err, parseErrors); matched != 1 {
				t.Fatalf("Parse() error %q matches %d of the package's errors, want 1", err, matched)
			}
			if _, derr := wire.Decode(b); derr == nil || derr.Error() != err.Error() {
				t.Fatalf("Decode() error = %v, Parse() error = %v", derr, err)
			}
			return
		}

		if op := wire.PeekOp(b); op != p.Op {
			t.Fatalf("PeekOp() = %v, Parse() op %v", op, p.Op)
		}
		keyLen := int(binary.BigEndian.Uint16(b[6:]))
		switch {
		case len(p.Key) != keyLen || keyLen == 0 || keyLen > wire.MaxKeyLen:
			t.Fatalf("key of %d bytes, header says %d", len(p.Key), keyLen)
		case !bytes.Equal(p.Key, b[wire.HeaderLen:wire.HeaderLen+keyLen]):
			t.Fatal("Key is not the bytes after the header")
		case !bytes.Equal(p.Fragment, b[wire.HeaderLen+keyLen:len(b)-tagLen(&p)]):
			t.Fatal("Fragment is not the bytes after the key (and before the tag)")
		case hashing.DigestOf(p.Key) != p.Digest:
			t.Fatal("digest does not match the key")
		case p.ValueLen > wire.MaxValueLen || uint64(p.FragOffset)+uint64(len(p.Fragment)) > uint64(p.ValueLen):
			t.Fatalf("fragment [%d, +%d) of a %d-byte value", p.FragOffset, len(p.Fragment), p.ValueLen)
		case strings.HasPrefix(p.Op.String(), "Op(") || strings.HasPrefix(p.Status.String(), "Status("):
			t.Fatalf("unknown op %v or status %v accepted", p.Op, p.Status)
		}

		if p.Op == wire.OpMore {
			checkMore(t, b, &p)
			return
		}
		if p.Complete() {
			d, err := wire.Decode(b)
			if err != nil || d.Header != p.Header || !bytes.Equal(d.Key, p.Key) || !bytes.Equal(d.Value, p.Fragment) {
				t.Fatalf("Decode() = %+v, %v; Parse() = %+v", d.Header, err, p.Header)
			}
			if len(b) > wire.MaxDatagram {
				return // valid, but no UDP datagram carries it
			}
			m := wire.Message{Header: p.Header, Key: p.Key, Value: p.Fragment}
			out, next, err := appendAs(b, &m, 0, wire.MaxDatagram)
			if err != nil || next != len(m.Value) {
				t.Fatalf("AppendDatagram() = %d, %v", next, err)
			}
			if !bytes.Equal(out, b) {
				t.Fatalf("complete packet re-encoded differently:\n got %x\nwant %x", out, b)
			}
			return
		}

		// A fragment: re-encode it from a value holding its bytes.
		if _, err := wire.Decode(b); !errors.Is(err, wire.ErrValue) {
			t.Fatalf("Decode() of a fragment: error = %v, want ErrValue", err)
		}
		if !p.Has(wire.FlagFragmented) {
			t.Fatal("incomplete packet without FlagFragmented")
		}
		value := make([]byte, p.ValueLen)
		copy(value[p.FragOffset:], p.Fragment)
		m := wire.Message{Header: p.Header, Key: p.Key, Value: value}
		// Re-encode at the fragment's own datagram size, where it is a
		// fragment of a value that needs more than one datagram.
		if len(b) < wire.MinDatagram || len(b) > wire.MaxDatagram {
			return
		}
		out, next, err := appendAs(b, &m, int(p.FragOffset), len(b))
		if err != nil || next <= int(p.FragOffset) {
			t.Fatalf("AppendDatagram() = %d, %v", next, err)
		}
		if !bytes.Equal(out[:wire.HeaderLen], b[:wire.HeaderLen]) {
			t.Fatalf("fragment header re-encoded differently:\n got %x\nwant %x", out[:wire.HeaderLen], b[:wire.HeaderLen])
		}
		if !bytes.HasPrefix(out[wire.HeaderLen:], b[wire.HeaderLen:]) {
			t.Fatal("fragment key and bytes re-encoded differently")
		}
		// At its own size, a fragment re-encodes exactly.
		if len(b) >= wire.MinDatagram && len(b) <= wire.MaxDatagram && int(p.ValueLen) > wire.FragmentCapacity(len(b), keyLen)-tagLen(&p) {
			out, _, err := appendAs(b, &m, int(p.FragOffset), len(b))
			if err != nil || !bytes.Equal(out, b) {
				t.Fatalf("fragment re-encoded at its size %d differently: %v\n got %x\nwant %x", len(b), err, out, b)
			}
		}
	})
}

// tagLen is the length of what p carries after its value bytes: its
// stamp and MAC tag (wire.Trailer).
func tagLen(p *wire.Packet) int { return wire.Trailer(p.Has(wire.FlagAuth), p.Stamped) }

// sameTag is a wire.Signer that appends a fixed tag: the one of the
// datagram being re-encoded.
type sameTag []byte

func (s sameTag) AppendTag(dst, _ []byte) []byte { return append(dst, s...) }

// appendAs re-encodes m, parsed from datagram b, as b was encoded: signed,
// with b's own tag, when b carries FlagAuth, and with its stamp when it
// carries one.
func appendAs(b []byte, m *wire.Message, off, size int) ([]byte, int, error) {
	if _, tag, ok := wire.Signed(b); ok {
		if p, err := wire.Parse(b); err == nil && p.Stamped {
			return wire.AppendStampedDatagram(nil, m, off, size, sameTag(tag), &p.Stamp)
		}
		return wire.AppendSignedDatagram(nil, m, off, size, sameTag(tag))
	}
	return wire.AppendDatagram(nil, m, off, size)
}

// fuzzReassemblyConfig is small so that the fuzzer reaches the limits.
var fuzzReassemblyConfig = wire.ReassemblyConfig{MaxMessages: 4, MaxBytes: 8192, Timeout: time.Second}

// fuzzStep is the time between two datagrams of a FuzzReassemble input.
const fuzzStep = 50 * time.Millisecond

// fuzzSenders are the senders a FuzzReassemble record picks from.
var fuzzSenders = [4]netip.AddrPort{
	netip.MustParseAddrPort("198.18.0.1:7000"),
	netip.MustParseAddrPort("198.18.0.1:7001"),
	netip.MustParseAddrPort("198.18.0.2:7000"),
	netip.MustParseAddrPort("[fd00::1]:7000"),
}

// record appends one FuzzReassemble record: a big-endian uint16 whose top 2
// bits pick the sender and low 14 bits give the datagram's length, then the
// datagram.
func record(dst []byte, sender int, datagram []byte) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(sender)<<14|uint16(len(datagram)))
	return append(dst, datagram...)
}

// splitRecords undoes record; a short last record takes what is left.
func splitRecords(in []byte) (senders []int, datagrams [][]byte) {
	for len(in) >= 2 {
		h := binary.BigEndian.Uint16(in)
		n := min(int(h&0x3FFF), len(in)-2)
		senders = append(senders, int(h>>14))
		datagrams = append(datagrams, in[2:2+n])
		in = in[2+n:]
	}
	return senders, datagrams
}

func FuzzReassemble(f *testing.F) {
	golden := goldenData(f)
	var frags [][]byte
	for _, b := range golden {
		if p, err := wire.Parse(b); err == nil && !p.Complete() {
			frags = append(frags, b)
		}
	}
	var inOrder, reversed, twoSenders, withComplete []byte
	for i, b := range frags {
		inOrder = record(inOrder, 0, b)
		reversed = record(reversed, 1, frags[len(frags)-1-i])
		twoSenders = record(record(twoSenders, 0, b), 2, frags[len(frags)-1-i])
		withComplete = record(withComplete, 3, b)
		withComplete = record(withComplete, 3, golden[i%len(golden)])
	}
	f.Add(inOrder)
	f.Add(reversed)
	f.Add(twoSenders)
	f.Add(withComplete)
	f.Add(append(bytes.Clone(inOrder), inOrder...))

	f.Fuzz(func(t *testing.T, in []byte) {
		cfg := fuzzReassemblyConfig
		r := wire.NewReassembler(cfg)
		var history []fedPacket // every packet fed, to check where bytes came from
		var completed, asks uint64
		now := t0
		senders, datagrams := splitRecords(in)
		for i, b := range datagrams {
			now = now.Add(fuzzStep)
			p, err := wire.Parse(b)
			if err != nil {
				continue
			}
			src := fuzzSenders[senders[i]]
			history = append(history, fedPacket{src, p})
			m, ok, from := r.Receive(src, &p, now)
			if ok {
				completed++
				checkReassembled(t, src, &m, history)
			}
			if from != 0 {
				asks++
			}
			s := r.Stats()
			switch {
			case from != 0 && (ok || from >= p.ValueLen):
				t.Fatalf("datagram %d: asked for bytes from %d of a %d-byte value (completed %v)", i, from, p.ValueLen, ok)
			case s.Asks != asks:
				t.Fatalf("datagram %d: Asks = %d, %d returned", i, s.Asks, asks)
			case s.Completed != completed:
				t.Fatalf("datagram %d: Completed = %d, %d returned", i, s.Completed, completed)
			case s.PendingBytes > cfg.MaxBytes || s.PendingBytes < 0:
				t.Fatalf("datagram %d: PendingBytes = %d, MaxBytes %d", i, s.PendingBytes, cfg.MaxBytes)
			case s.Pending > cfg.MaxMessages || s.Pending < 0:
				t.Fatalf("datagram %d: Pending = %d, MaxMessages %d", i, s.Pending, cfg.MaxMessages)
			case (s.Pending == 0) != (s.PendingBytes == 0):
				t.Fatalf("datagram %d: %d pending messages of %d bytes", i, s.Pending, s.PendingBytes)
			}
		}
		r.Expire(now.Add(cfg.Timeout))
		if s := r.Stats(); s.Pending != 0 || s.PendingBytes != 0 {
			t.Fatalf("after the timeout: Stats() = %+v", s)
		}
	})
}

// checkMore checks a MORE that Parse accepted: it asks for bytes inside
// the value, carries nothing else, is no message Decode returns, and
// re-encodes exactly.
func checkMore(t *testing.T, b []byte, p *wire.Packet) {
	t.Helper()
	if len(p.Fragment) != 0 || p.Flags != 0 || p.FragOffset == 0 || p.FragOffset >= p.ValueLen {
		t.Fatalf("MORE accepted with flags %v, %d value bytes, from byte %d of %d", p.Flags, len(p.Fragment), p.FragOffset, p.ValueLen)
	}
	if _, err := wire.Decode(b); !errors.Is(err, wire.ErrValue) {
		t.Fatalf("Decode() of MORE: error = %v, want ErrValue", err)
	}
	m := wire.Message{Header: p.Header, Key: p.Key}
	out, _, err := wire.AppendDatagram(nil, &m, 0, wire.MaxDatagram)
	if err != nil || !bytes.Equal(out, b) {
		t.Fatalf("MORE re-encoded differently: %v\n got %x\nwant %x", err, out, b)
	}
}

// fedPacket is a packet FuzzReassemble gave a Reassembler.
type fedPacket struct {
	src netip.AddrPort
	p   wire.Packet
}

// checkReassembled checks a message the Reassembler returned for src: its
// value has its length, and each of its bytes came from a fragment of the
// same message (same sender, op, sequence number, key, value length and
// version) carrying that byte.
func checkReassembled(t *testing.T, src netip.AddrPort, m *wire.Message, history []fedPacket) {
	t.Helper()
	if len(m.Value) != int(m.ValueLen) || m.FragOffset != 0 {
		t.Fatalf("message of %d bytes, ValueLen %d, FragOffset %d", len(m.Value), m.ValueLen, m.FragOffset)
	}
	if len(m.Key) == 0 || len(m.Key) > wire.MaxKeyLen || hashing.DigestOf(m.Key) != m.Digest {
		t.Fatalf("message key %q does not match its digest", m.Key)
	}
	for i, c := range m.Value {
		found := false
		for _, h := range history {
			p := &h.p
			if h.src != src || p.Op != m.Op || p.Seq != m.Seq || p.ValueLen != m.ValueLen ||
				p.ValueVersion != m.ValueVersion || !bytes.Equal(p.Key, m.Key) {
				continue
			}
			if j := i - int(p.FragOffset); j >= 0 && j < len(p.Fragment) && p.Fragment[j] == c {
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("value byte %d = %#x came from no fragment of the message", i, c)
		}
	}
}
