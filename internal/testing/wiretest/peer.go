// Package wiretest is a plain UDP socket that speaks the data-plane wire
// protocol by hand, for tests that must bypass the transport: put
// requests into a process's socket before its reader runs (so that they
// arrive as one receive batch), read exactly the datagrams it sends, or
// play a peer that sends and reads only when the test says so.
package wiretest

import (
	"bytes"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/wire"
)

// Peer is a UDP socket on loopback, closed when the test ends.
type Peer struct {
	t    testing.TB
	conn *net.UDPConn
	buf  []byte
}

// NewPeer opens a Peer on 127.0.0.1 at a free port.
func NewPeer(t testing.TB) *Peer {
	t.Helper()
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return &Peer{t: t, conn: conn, buf: make([]byte, wire.MaxDatagram+1)} // +1: an oversized datagram is not cut to a valid size
}

// Addr is the peer's address.
func (p *Peer) Addr() netip.AddrPort { return p.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

// Send sends m, which must fit one datagram, to dst.
func (p *Peer) Send(dst netip.AddrPort, m *wire.Message) {
	p.t.Helper()
	d, err := wire.Encode(m, wire.DefaultDatagram)
	if err != nil {
		p.t.Fatal(err)
	}
	p.WriteTo(dst, d)
}

// WriteTo sends the datagram d, as it is, to dst.
func (p *Peer) WriteTo(dst netip.AddrPort, d []byte) {
	p.t.Helper()
	if _, err := p.conn.WriteToUDPAddrPort(d, dst); err != nil {
		p.t.Fatal(err)
	}
}

// SendGets sends a GET of each key to dst, keys[i] with sequence number
// i+1.
func (p *Peer) SendGets(dst netip.AddrPort, keys ...string) {
	p.t.Helper()
	for i, k := range keys {
		p.Send(dst, &wire.Message{Header: wire.Header{Op: wire.OpGet, Seq: uint64(i + 1)}, Key: []byte(k)})
	}
}

// Read returns the next message sent to the peer, in bytes of its own;
// patience only keeps a broken process from hanging the test.
func (p *Peer) Read(patience time.Duration) wire.Message {
	p.t.Helper()
	m, err := wire.Decode(p.ReadDatagram(patience))
	if err != nil {
		p.t.Fatal(err)
	}
	return m
}

// ReadDatagram returns the next datagram sent to the peer, as it is, in
// bytes of its own; patience as Read's.
func (p *Peer) ReadDatagram(patience time.Duration) []byte {
	p.t.Helper()
	if err := p.conn.SetReadDeadline(time.Now().Add(patience)); err != nil {
		p.t.Fatal(err)
	}
	n, _, err := p.conn.ReadFromUDPAddrPort(p.buf)
	if err != nil {
		p.t.Fatal(err)
	}
	return bytes.Clone(p.buf[:n])
}
