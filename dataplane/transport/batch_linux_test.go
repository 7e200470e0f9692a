//go:build linux

package transport

import (
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

func TestSockaddrRoundTrip(t *testing.T) {
	tests := []struct {
		name   string
		family int
		dst    string
		want   string // the address decoded back (IPv4-mapped reads as IPv4)
		len    uint32
	}{
		{"IPv4 socket", unix.AF_INET, "127.0.0.1:7301", "127.0.0.1:7301", unix.SizeofSockaddrInet4},
		{"IPv4-mapped peer of an IPv4 socket", unix.AF_INET, "[::ffff:198.18.0.9]:65535", "198.18.0.9:65535", unix.SizeofSockaddrInet4},
		{"IPv6 socket", unix.AF_INET6, "[2001:db8::1]:1", "[2001:db8::1]:1", unix.SizeofSockaddrInet6},
		{"IPv4 peer of a dual-stack socket", unix.AF_INET6, "198.19.1.2:53", "198.19.1.2:53", unix.SizeofSockaddrInet6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := netip.MustParseAddrPort(tt.dst)
			if !addressable(dst.Addr(), tt.family) {
				t.Fatalf("%v not addressable from family %d", dst, tt.family)
			}
			var sa [sockaddrLen]byte
			for i := range sa {
				sa[i] = 0xff // stale bytes of an earlier, longer address
			}
			n := encodeSockaddr(&sa, dst, tt.family)
			if n != tt.len {
				t.Fatalf("length %d, want %d", n, tt.len)
			}
			if got := decodeSockaddr(sa[:n]); got != netip.MustParseAddrPort(tt.want) {
				t.Fatalf("decoded %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNotAddressable(t *testing.T) {
	for _, tt := range []struct {
		addr   netip.Addr
		family int
	}{
		{netip.MustParseAddr("::1"), unix.AF_INET},
		{netip.MustParseAddr("fe80::1%lo"), unix.AF_INET6},
		{netip.Addr{}, unix.AF_INET6},
		{netip.MustParseAddr("127.0.0.1"), unix.AF_UNIX},
	} {
		if addressable(tt.addr, tt.family) {
			t.Errorf("%v addressable from family %d", tt.addr, tt.family)
		}
	}
}

// FuzzDecodeSockaddr feeds arbitrary source addresses to the decoder: it
// must not panic, and what it decodes must encode back to the same address.
func FuzzDecodeSockaddr(f *testing.F) {
	for _, a := range []string{"127.0.0.1:1", "[::1]:2", "198.18.2.3:65535"} {
		for _, family := range []int{unix.AF_INET, unix.AF_INET6} {
			dst := netip.MustParseAddrPort(a)
			if addressable(dst.Addr(), family) {
				var sa [sockaddrLen]byte
				f.Add(sa[:encodeSockaddr(&sa, dst, family)])
			}
		}
	}
	f.Add([]byte{})
	f.Add([]byte{1, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		got := decodeSockaddr(b)
		if !got.IsValid() {
			return
		}
		var sa [sockaddrLen]byte
		n := encodeSockaddr(&sa, got, unix.AF_INET6)
		if back := decodeSockaddr(sa[:n]); back != got {
			t.Fatalf("%x decoded to %v, which re-encodes to %v", b, got, back)
		}
	})
}
