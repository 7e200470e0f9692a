package wireauth_test

import (
	"bytes"
	"testing"

	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/dataplane/wireauth"
	"github.com/distcache/distcache/placement/hashing"
)

// FuzzAuthenticate runs the receiver's authenticated decode — wire.Parse,
// wire.Signed, Keyring.Verify — on any input, stamped or not: it never
// panics, a datagram accepted under a key re-signs to the same bytes, and
// one byte changed anywhere in an accepted datagram, its version byte and
// stamp included, is rejected.
func FuzzAuthenticate(f *testing.F) {
	k := keyring(f, keyA, keyB)
	for _, op := range []wire.Op{wire.OpPut, wire.OpInvalidate, wire.OpFetchReply, wire.OpGet} {
		key := []byte("key:42")
		m := wire.Message{Header: wire.Header{Op: op, Seq: 7, MapVersion: 3}, Key: key, Value: []byte("value")}
		b, _, err := wire.AppendSignedDatagram(nil, &m, 0, wire.DefaultDatagram, k)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint16(0))
		f.Add(b, uint16(len(b)-1))
		st := wire.Stamp{Sender: 1, Epoch: 2, Seq: 3, Time: 4}
		s, _, err := wire.AppendStampedDatagram(nil, &m, 0, wire.DefaultDatagram, k, &st)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(s, uint16(2))
		f.Add(s, uint16(len(s)-wire.TagLen-1))
		u, _, err := wire.AppendDatagram(nil, &m, 0, wire.DefaultDatagram)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(u, uint16(5))
	}
	f.Fuzz(func(t *testing.T, b []byte, at uint16) {
		p, err := wire.Parse(b)
		if err != nil {
			return
		}
		data, tag, ok := wire.Signed(b)
		if ok != p.Has(wire.FlagAuth) {
			t.Fatalf("Signed() ok = %v with flags %#x", ok, p.Flags)
		}
		if !ok || !k.Verify(data, tag) {
			return
		}
		if len(tag) != wire.TagLen || !bytes.Equal(k.AppendTag(bytes.Clone(data), data), b) {
			t.Fatal("an accepted datagram does not re-sign to itself")
		}
		if hashing.DigestOf(p.Key) != p.Digest {
			t.Fatal("accepted datagram with a wrong digest")
		}
		c := bytes.Clone(b)
		c[int(at)%len(c)] ^= 0x80
		if d, tg, ok := wire.Signed(c); ok && k.Verify(d, tg) {
			t.Fatalf("a datagram with byte %d changed is accepted", int(at)%len(c))
		}
	})
}

// compile-time check: a Keyring is what the wire encoder signs with.
var _ wire.Signer = (*wireauth.Keyring)(nil)

// TestTagLenMatchesWire: the key ring's tags fill the wire format's
// trailer exactly.
func TestTagLenMatchesWire(t *testing.T) {
	if wireauth.TagLen != wire.TagLen {
		t.Fatalf("wireauth.TagLen %d, wire.TagLen %d", wireauth.TagLen, wire.TagLen)
	}
}
