// Package dnstest is a real DNS server on a loopback UDP socket for tests:
// it answers A queries from records the test sets and changes, as a
// cluster's DNS does when a pod starts or is recreated with a new IP, or a
// headless Service's name when its ready pods change.
package dnstest

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// Server answers A queries from its records; other names get NXDOMAIN,
// and AAAA queries of known names an empty answer.
type Server struct {
	conn    net.PacketConn
	mu      sync.Mutex              // guards records
	records map[string][]netip.Addr // FQDN → IPv4s
}

// Start serves until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	var lc net.ListenConfig
	conn, err := lc.ListenPacket(context.Background(), "udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{conn: conn, records: map[string][]netip.Addr{}}
	done := make(chan struct{})
	go func() { defer close(done); s.serve() }()
	t.Cleanup(func() { _ = conn.Close(); <-done })
	return s
}

// Set gives the fully qualified name an A record of ip ("" removes it).
func (s *Server) Set(name string, ip string) {
	if ip == "" {
		s.SetAll(name)
		return
	}
	s.SetAll(name, ip)
}

// SetAll gives the fully qualified name an A record of each of ips, as a
// headless Service's name has one per ready pod (none removes the name).
func (s *Server) SetAll(name string, ips ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(ips) == 0 {
		delete(s.records, name)
		return
	}
	addrs := make([]netip.Addr, len(ips))
	for i, ip := range ips {
		addrs[i] = netip.MustParseAddr(ip)
	}
	s.records[name] = addrs
}

// Resolver sends every query to s.
func (s *Server) Resolver() *net.Resolver {
	addr := s.conn.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", addr)
	}}
}

func (s *Server) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := s.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		if reply, ok := s.answer(buf[:n]); ok {
			_, _ = s.conn.WriteTo(reply, from)
		}
	}
}

func (s *Server) answer(query []byte) ([]byte, bool) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, false
	}
	q, err := p.Question()
	if err != nil {
		return nil, false
	}
	s.mu.Lock()
	ips, known := s.records[q.Name.String()]
	s.mu.Unlock()
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired}
	if !known {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	if b.StartQuestions() != nil || b.Question(q) != nil || b.StartAnswers() != nil {
		return nil, false
	}
	if q.Type != dnsmessage.TypeA {
		ips = nil // a known name's AAAA query: an empty answer
	}
	for _, ip := range ips {
		if b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 0}, dnsmessage.AResource{A: ip.As4()}) != nil {
			return nil, false
		}
	}
	out, err := b.Finish()
	return out, err == nil
}
