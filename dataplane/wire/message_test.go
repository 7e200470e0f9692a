package wire_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/placement/hashing"
)

func TestAppendDatagramErrors(t *testing.T) {
	tests := []struct {
		name string
		m    *wire.Message
		off  int
		size int
	}{
		{"nil key", msg(withKey(nil)), 0, wire.DefaultDatagram},
		{"empty key", msg(withKey([]byte{})), 0, wire.DefaultDatagram},
		{"key of MaxKeyLen+1", msg(withKey(repeat('k', wire.MaxKeyLen+1))), 0, wire.DefaultDatagram},
		{"value of MaxValueLen+1", msg(withValue(make([]byte, wire.MaxValueLen+1))), 0, wire.DefaultDatagram},
		{"size 0", msg(), 0, 0},
		{"size negative", msg(), 0, -1},
		{"size MinDatagram-1", msg(), 0, wire.MinDatagram - 1},
		{"size MaxDatagram+1", msg(), 0, wire.MaxDatagram + 1},
		{"negative offset", msg(withValue([]byte("abc"))), -1, wire.DefaultDatagram},
		{"offset past the value", msg(withValue([]byte("abc"))), 4, wire.DefaultDatagram},
		{"offset at the end of a value", msg(withValue([]byte("abc"))), 3, wire.DefaultDatagram},
		{"offset 1 of an empty value", msg(), 1, wire.DefaultDatagram},
		{"offset at the end of a fragmented value", msg(withValue(make([]byte, 5000))), 5000, wire.DefaultDatagram},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := []byte("prefix")
			got, next, err := wire.AppendDatagram(dst, tc.m, tc.off, tc.size)
			if err == nil {
				t.Fatalf("AppendDatagram() = %x, %d, nil; want an error", got, next)
			}
			if string(got) != "prefix" || next != tc.off {
				t.Errorf("AppendDatagram() = %q, %d on error; want dst and off unchanged", got, next)
			}
		})
	}
}

func TestAppendDatagramBoundaries(t *testing.T) {
	tests := []struct {
		name string
		m    *wire.Message
		size int
	}{
		{"size MinDatagram", msg(), wire.MinDatagram},
		{"size MaxDatagram", msg(), wire.MaxDatagram},
		{"value of MaxValueLen", msg(withValue(make([]byte, wire.MaxValueLen))), wire.MaxDatagram},
		{"key of MaxKeyLen", msg(withKey(repeat('k', wire.MaxKeyLen))), wire.MinDatagram},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, _, err := wire.AppendDatagram(nil, tc.m, 0, tc.size)
			if err != nil {
				t.Fatalf("AppendDatagram() error = %v", err)
			}
			if len(b) > tc.size {
				t.Errorf("datagram of %d bytes over size %d", len(b), tc.size)
			}
			if _, err := wire.Parse(b); err != nil {
				t.Errorf("Parse() error = %v", err)
			}
		})
	}
}

// TestAppendDatagramKeepsDst checks that AppendDatagram appends after dst's
// bytes and does not change the message.
func TestAppendDatagramKeepsDst(t *testing.T) {
	m := msg(withFlags(wire.FlagFragmented), withValue(pattern(3000, 251)))
	before := *m
	dst := []byte("prefix")
	b, next, err := wire.AppendDatagram(dst, m, 0, wire.DefaultDatagram)
	if err != nil {
		t.Fatal(err)
	}
	if string(b[:6]) != "prefix" {
		t.Errorf("dst overwritten: %q", b[:6])
	}
	if next != wire.FragmentCapacity(wire.DefaultDatagram, len(m.Key)) {
		t.Errorf("next = %d", next)
	}
	if _, err := wire.Parse(b[6:]); err != nil {
		t.Errorf("Parse() error = %v", err)
	}
	if m.Header != before.Header {
		t.Errorf("message header changed to %+v, was %+v", m.Header, before.Header)
	}
}

func TestFragmentCapacityAndDatagrams(t *testing.T) {
	const key = "key:42"
	c := wire.FragmentCapacity(wire.DefaultDatagram, len(key))
	if want := wire.DefaultDatagram - wire.HeaderLen - len(key); c != want {
		t.Fatalf("FragmentCapacity() = %d, want %d", c, want)
	}
	tests := []struct {
		valueLen int
		want     int
	}{
		{0, 1},
		{1, 1},
		{c, 1},
		{c + 1, 2},
		{2 * c, 2},
		{2*c + 1, 3},
		{wire.MaxValueLen, (wire.MaxValueLen + c - 1) / c},
	}
	for _, tc := range tests {
		m := msg(withValue(make([]byte, tc.valueLen)))
		if got := wire.Datagrams(m, wire.DefaultDatagram); got != tc.want {
			t.Errorf("Datagrams(%d-byte value) = %d, want %d", tc.valueLen, got, tc.want)
		}
		n, fragmented := 0, false
		for off := 0; n == 0 || off < tc.valueLen; n++ {
			b, next, err := wire.AppendDatagram(nil, m, off, wire.DefaultDatagram)
			if err != nil {
				t.Fatalf("%d-byte value at %d: %v", tc.valueLen, off, err)
			}
			p, err := wire.Parse(b)
			if err != nil {
				t.Fatalf("%d-byte value at %d: %v", tc.valueLen, off, err)
			}
			fragmented = p.Has(wire.FlagFragmented)
			off = next
		}
		if n != tc.want {
			t.Errorf("%d-byte value: %d datagrams, Datagrams says %d", tc.valueLen, n, tc.want)
		}
		if fragmented != (tc.want > 1) {
			t.Errorf("%d-byte value: FlagFragmented = %v over %d datagrams", tc.valueLen, fragmented, n)
		}
	}
}

// datagrams returns every datagram of m at size.
func datagrams(t testing.TB, m *wire.Message, size int) [][]byte {
	t.Helper()
	var out [][]byte
	for off := 0; len(out) == 0 || off < len(m.Value); {
		var b []byte
		var err error
		b, off, err = wire.AppendDatagram(nil, m, off, size)
		if err != nil {
			t.Fatalf("AppendDatagram() error = %v", err)
		}
		out = append(out, b)
	}
	return out
}

func TestFragmentLargestValue(t *testing.T) {
	value := pattern(wire.MaxValueLen, 251)
	m := msg(withOp(wire.OpFetchReply), withKey(pattern(wire.MaxKeyLen, 256)), withValue(value), withVersion(42), withMapVersion(3))
	want := wire.Datagrams(m, wire.DefaultDatagram)
	if c := wire.FragmentCapacity(wire.DefaultDatagram, wire.MaxKeyLen); want != (wire.MaxValueLen+c-1)/c {
		t.Fatalf("Datagrams() = %d for capacity %d", want, c)
	}
	ds := datagrams(t, m, wire.DefaultDatagram)
	if len(ds) != want {
		t.Fatalf("%d datagrams, Datagrams() = %d", len(ds), want)
	}
	var joined []byte
	for i, b := range ds {
		if len(b) > wire.DefaultDatagram {
			t.Fatalf("datagram %d of %d bytes over %d", i, len(b), wire.DefaultDatagram)
		}
		if i < len(ds)-1 && len(b) != wire.DefaultDatagram {
			t.Errorf("datagram %d of %d bytes, want full %d", i, len(b), wire.DefaultDatagram)
		}
		p, err := wire.Parse(b)
		if err != nil {
			t.Fatalf("datagram %d: Parse() error = %v", i, err)
		}
		if !p.Has(wire.FlagFragmented) || p.Complete() {
			t.Fatalf("datagram %d: flags %#x, Complete() = %v", i, uint8(p.Flags), p.Complete())
		}
		if int(p.FragOffset) != len(joined) {
			t.Fatalf("datagram %d at offset %d, want %d", i, p.FragOffset, len(joined))
		}
		if p.ValueLen != wire.MaxValueLen || p.Op != wire.OpFetchReply || p.ValueVersion != 42 || p.MapVersion != 3 || !bytes.Equal(p.Key, m.Key) {
			t.Fatalf("datagram %d: header %+v", i, p.Header)
		}
		joined = append(joined, p.Fragment...)
	}
	if !bytes.Equal(joined, value) {
		t.Fatalf("fragments join to %d bytes that differ from the value", len(joined))
	}
}

func TestEncode(t *testing.T) {
	const key = "key:42"
	c := wire.FragmentCapacity(wire.DefaultDatagram, len(key))
	tests := []struct {
		name    string
		m       *wire.Message
		size    int
		wantErr bool
	}{
		{"empty value", msg(), wire.DefaultDatagram, false},
		{"value filling the datagram", msg(withValue(make([]byte, c))), wire.DefaultDatagram, false},
		{"value needing 2 datagrams", msg(withValue(make([]byte, c+1))), wire.DefaultDatagram, true},
		{"value of MaxValueLen", msg(withValue(make([]byte, wire.MaxValueLen))), wire.MaxDatagram, true},
		{"bad size", msg(), 10, true},
		{"bad key", msg(withKey(nil)), wire.DefaultDatagram, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := wire.Encode(tc.m, tc.size)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("Encode() = %d bytes, want an error", len(b))
				}
				return
			}
			if err != nil {
				t.Fatalf("Encode() error = %v", err)
			}
			m, err := wire.Decode(b)
			if err != nil {
				t.Fatalf("Decode() error = %v", err)
			}
			if !bytes.Equal(m.Value, tc.m.Value) || m.Has(wire.FlagFragmented) {
				t.Errorf("Decode() = %+v", m)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	frags := datagrams(t, msg(withValue(pattern(2000, 251))), wire.MinDatagram)
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"first fragment", frags[0], wire.ErrValue},
		{"last fragment", frags[len(frags)-1], wire.ErrValue},
		{"bad magic", set(0, 0), wire.ErrMagic},
		{"truncated", valid()[:10], wire.ErrTruncated},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := wire.Decode(tc.in)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Decode() = %+v, %v; want %v", m, err, tc.want)
			}
		})
	}
}

func TestDigest(t *testing.T) {
	key := []byte("key:42")
	other := hashing.DigestOfString("another key")
	tests := []struct {
		name      string
		digest    hashing.Digest
		want      hashing.Digest
		wantParse error
	}{
		{"zero is computed", hashing.Digest{}, hashing.DigestOf(key), nil},
		{"set is kept", hashing.DigestOf(key), hashing.DigestOf(key), nil},
		{"wrong set is kept", other, other, wire.ErrDigest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := msg(withKey(key), withDigest(tc.digest), withValue([]byte("v")))
			b, _, err := wire.AppendDatagram(nil, m, 0, wire.DefaultDatagram)
			if err != nil {
				t.Fatal(err)
			}
			if got := hashing.Digest(b[16:32]); got != tc.want {
				t.Errorf("digest on the wire = %x, want %x", got, tc.want)
			}
			if m.Digest != tc.digest {
				t.Errorf("message digest changed to %x", m.Digest)
			}
			if _, err := wire.Parse(b); !errors.Is(err, tc.wantParse) {
				t.Errorf("Parse() error = %v, want %v", err, tc.wantParse)
			}
		})
	}
}

func TestAllocs(t *testing.T) {
	small := msg(withOp(wire.OpGetReply), withValue([]byte("hello")), withTelemetry(7, 1234))
	large := msg(withOp(wire.OpFetchReply), withKey(repeat('k', wire.MaxKeyLen)), withValue(pattern(wire.MaxValueLen, 251)))
	tests := []struct {
		name string
		m    *wire.Message
		off  int
	}{
		{"one datagram, digest computed", small, 0},
		{"one datagram, digest set", msg(withValue([]byte("hello")), withDigest(hashing.DigestOfString("key:42"))), 0},
		{"middle fragment", large, 100 * wire.FragmentCapacity(wire.DefaultDatagram, wire.MaxKeyLen)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			buf := make([]byte, 0, wire.DefaultDatagram)
			var b []byte
			var err error
			if n := testing.AllocsPerRun(100, func() {
				b, _, err = wire.AppendDatagram(buf[:0], tc.m, tc.off, wire.DefaultDatagram)
			}); n != 0 {
				t.Errorf("AppendDatagram: %v allocations, want 0", n)
			}
			if err != nil {
				t.Fatal(err)
			}
			var p wire.Packet
			if n := testing.AllocsPerRun(100, func() {
				p, err = wire.Parse(b)
			}); n != 0 {
				t.Errorf("Parse: %v allocations, want 0", n)
			}
			if err != nil || len(p.Key) != len(tc.m.Key) {
				t.Fatalf("Parse() = %+v, %v", p.Header, err)
			}
		})
	}
}
