package peers_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/distcache/distcache/dataplane/peers"
	"github.com/distcache/distcache/placement/partmap"
)

// dnsServer is a real DNS server on a loopback UDP socket that answers A
// queries from records, which a test changes as a cluster's DNS would when
// a pod is recreated with a new IP. Other names get NXDOMAIN; AAAA queries
// of known names an empty answer.
type dnsServer struct {
	conn    net.PacketConn
	mu      sync.Mutex            // guards records
	records map[string]netip.Addr // FQDN → IPv4
}

func startDNS(t *testing.T) *dnsServer {
	t.Helper()
	var lc net.ListenConfig
	conn, err := lc.ListenPacket(t.Context(), "udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &dnsServer{conn: conn, records: map[string]netip.Addr{}}
	done := make(chan struct{})
	go func() { defer close(done); s.serve() }()
	t.Cleanup(func() { _ = conn.Close(); <-done })
	return s
}

func (s *dnsServer) set(name string, ip string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ip == "" {
		delete(s.records, name)
		return
	}
	s.records[name] = netip.MustParseAddr(ip)
}

func (s *dnsServer) serve() {
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

func (s *dnsServer) answer(query []byte) ([]byte, bool) {
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
	ip, known := s.records[q.Name.String()]
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
	if known && q.Type == dnsmessage.TypeA {
		if b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 0}, dnsmessage.AResource{A: ip.As4()}) != nil {
			return nil, false
		}
	}
	out, err := b.Finish()
	return out, err == nil
}

// resolver sends every query to s.
func (s *dnsServer) resolver() *net.Resolver {
	addr := s.conn.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", addr)
	}}
}

// TestRefreshFollowsDNS resolves a map whose addresses are DNS names, as
// the operator publishes them, through a real DNS server: a pod recreated
// with a new IP is reached at it after Refresh, without a new map; a name
// without a record yet resolves once it has one; a failed lookup keeps the
// address that worked.
func TestRefreshFollowsDNS(t *testing.T) {
	dns := startDNS(t)
	m, err := partmap.Build(partmap.Spec{Cluster: "t", Racks: 1, ShardsPerRack: 1,
		Layers: []partmap.LayerSpec{{Name: "spine", Nodes: 2}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m.Layers[0].Members[0].Address = "t-spine-0.t-spine.ns.svc.test.:7100"
	m.Layers[0].Members[1].Address = "t-spine-1.t-spine.ns.svc.test.:7100"
	m.Storage.Racks[0].Shards[0].Address = "198.18.0.9:7000"
	dns.set("t-spine-0.t-spine.ns.svc.test.", "198.18.0.1") // spine-1 has no record yet
	tb := peers.Resolve(m, nil, peers.WithResolver(dns.resolver()))
	check := func(step string, want0, want1 string) {
		t.Helper()
		for i, want := range []string{want0, want1} {
			got := tb.Member(0, i)
			if (want == "" && got.IsValid()) || (want != "" && got != netip.MustParseAddrPort(want)) {
				t.Fatalf("%s: member %d at %v, want %q", step, i, got, want)
			}
		}
		if got := tb.Shard(0, 0); got != netip.MustParseAddrPort("198.18.0.9:7000") {
			t.Fatalf("%s: shard at %v", step, got)
		}
	}
	check("resolved", "198.18.0.1:7100", "")

	dns.set("t-spine-1.t-spine.ns.svc.test.", "198.18.0.2")
	if n := tb.Refresh(t.Context()); n != 1 {
		t.Fatalf("Refresh changed %d addresses, want 1 (the name that got a record)", n)
	}
	check("a record appeared", "198.18.0.1:7100", "198.18.0.2:7100")

	dns.set("t-spine-0.t-spine.ns.svc.test.", "198.18.0.3") // pod recreated
	if n := tb.Refresh(t.Context()); n != 1 {
		t.Fatalf("Refresh changed %d addresses, want 1 (the recreated pod)", n)
	}
	check("a pod got a new IP", "198.18.0.3:7100", "198.18.0.2:7100")

	dns.set("t-spine-1.t-spine.ns.svc.test.", "") // the record goes away for a while
	if n := tb.Refresh(t.Context()); n != 0 {
		t.Fatalf("Refresh changed %d addresses, want 0: a failed lookup keeps the last address", n)
	}
	check("a lookup failed", "198.18.0.3:7100", "198.18.0.2:7100")
	if n := tb.Refresh(t.Context()); n != 0 {
		t.Fatalf("a second Refresh without changes changed %d addresses", n)
	}
}

// TestRefreshOfLiterals checks that a table of IP literals (standalone
// mode) has nothing to look up.
func TestRefreshOfLiterals(t *testing.T) {
	m, err := partmap.Build(partmap.Spec{Cluster: "t", Racks: 1, ShardsPerRack: 1,
		Layers: []partmap.LayerSpec{{Name: "spine", Nodes: 1}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m.Layers[0].Members[0].Address = "127.0.0.1:7100"
	m.Storage.Racks[0].Shards[0].Address = "127.0.0.1:7000"
	failing := &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("no lookup expected")
	}}
	tb := peers.Resolve(m, nil, peers.WithResolver(failing))
	if n := tb.Refresh(t.Context()); n != 0 || tb.Member(0, 0) != netip.MustParseAddrPort("127.0.0.1:7100") {
		t.Fatalf("Refresh of literals changed %d, member at %v", n, tb.Member(0, 0))
	}
}

// TestResolveReusesThePreviousTable installs a new map over a resolved
// table after DNS has lost the known names' records (as when the cluster
// DNS lags or fails): the names the previous table knew keep their
// addresses without a lookup, and only the name new to the map is looked
// up.
func TestResolveReusesThePreviousTable(t *testing.T) {
	dns := startDNS(t)
	build := func(nodes int) *partmap.Map {
		m, err := partmap.Build(partmap.Spec{Cluster: "t", Racks: 1, ShardsPerRack: 1,
			Layers: []partmap.LayerSpec{{Name: "spine", Nodes: nodes}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range m.Layers[0].Members {
			m.Layers[0].Members[i].Address = fmt.Sprintf("t-spine-%d.t-spine.ns.svc.test.:7100", i)
		}
		m.Storage.Racks[0].Shards[0].Address = "t-rack-0-0.t-rack-0.ns.svc.test.:7000"
		return m
	}
	dns.set("t-spine-0.t-spine.ns.svc.test.", "198.18.0.1")
	dns.set("t-spine-1.t-spine.ns.svc.test.", "198.18.0.2")
	dns.set("t-rack-0-0.t-rack-0.ns.svc.test.", "198.18.0.9")
	first := peers.Resolve(build(2), nil, peers.WithResolver(dns.resolver()))

	for _, name := range []string{"t-spine-0.t-spine.ns.svc.test.", "t-spine-1.t-spine.ns.svc.test.", "t-rack-0-0.t-rack-0.ns.svc.test."} {
		dns.set(name, "")
	}
	dns.set("t-spine-2.t-spine.ns.svc.test.", "198.18.0.3")
	next := peers.Resolve(build(3), nil, peers.WithResolver(dns.resolver()), peers.WithPrevious(first))
	for i, want := range []string{"198.18.0.1:7100", "198.18.0.2:7100", "198.18.0.3:7100"} {
		if got := next.Member(0, i); got != netip.MustParseAddrPort(want) {
			t.Errorf("member %d at %v, want %s", i, got, want)
		}
	}
	if got := next.Shard(0, 0); got != netip.MustParseAddrPort("198.18.0.9:7000") {
		t.Errorf("shard at %v, want the previous table's 198.18.0.9:7000", got)
	}
}
