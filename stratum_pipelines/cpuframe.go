package pipelines

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// The Ethernet, IPv4 and UDP headers of a packet-in or packet-out: the
// frames a cache switch's controller and its program exchange through the
// CPU port (the controller's FETCH out, the FETCH_REPLY in). The software
// switch's ports carry UDP payloads, so it builds these frames for
// packet-ins and reads them from packet-outs; the controller does the
// converse.
const (
	ethLen   = 14
	ipv4Len  = 20
	udpLen   = 8
	frameLen = ethLen + ipv4Len + udpLen
)

// ErrFrame marks a frame that is not Ethernet carrying IPv4 and UDP.
var ErrFrame = errors.New("not an IPv4 UDP frame")

// AppendFrame appends an Ethernet, IPv4 and UDP frame from src to dst
// carrying payload.
func AppendFrame(b []byte, src, dst netip.AddrPort, payload []byte) []byte {
	var h [frameLen]byte
	binary.BigEndian.PutUint16(h[12:], 0x0800)
	ip := h[ethLen:]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(ipv4Len+udpLen+len(payload)))
	ip[8], ip[9] = 64, 17
	s, d := src.Addr().As4(), dst.Addr().As4()
	copy(ip[12:], s[:])
	copy(ip[16:], d[:])
	binary.BigEndian.PutUint16(ip[10:], IPv4Checksum(ip[:ipv4Len]))
	udp := ip[ipv4Len:]
	binary.BigEndian.PutUint16(udp[0:], src.Port())
	binary.BigEndian.PutUint16(udp[2:], dst.Port())
	binary.BigEndian.PutUint16(udp[4:], uint16(udpLen+len(payload)))
	return append(append(b, h[:]...), payload...)
}

// ParseFrame reads an Ethernet frame carrying IPv4 and UDP: its
// addresses and the UDP payload.
func ParseFrame(f []byte) (src, dst netip.AddrPort, payload []byte, err error) {
	if len(f) < frameLen || binary.BigEndian.Uint16(f[12:]) != 0x0800 {
		return src, dst, nil, fmt.Errorf("cannot read frame: %w", ErrFrame)
	}
	ip := f[ethLen:]
	ihl := int(ip[0]&0x0f) * 4
	if ip[0]>>4 != 4 || ihl < ipv4Len || ip[9] != 17 || len(ip) < ihl+udpLen {
		return src, dst, nil, fmt.Errorf("cannot read frame: %w", ErrFrame)
	}
	udp := ip[ihl:]
	n := int(binary.BigEndian.Uint16(udp[4:]))
	if n < udpLen || n > len(udp) {
		return src, dst, nil, fmt.Errorf("cannot read frame: UDP length %d of %d bytes", n, len(udp))
	}
	src = netip.AddrPortFrom(netip.AddrFrom4([4]byte(ip[12:16])), binary.BigEndian.Uint16(udp[0:]))
	dst = netip.AddrPortFrom(netip.AddrFrom4([4]byte(ip[16:20])), binary.BigEndian.Uint16(udp[2:]))
	return src, dst, udp[udpLen:n], nil
}

// IPv4Checksum is the header checksum of IPv4 header h (its checksum
// field zero).
func IPv4Checksum(h []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(h); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}
