package gateway_test

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/distcache/distcache/gateway"
	"github.com/distcache/distcache/internal/testing/clustertest"
	"github.com/distcache/distcache/internal/testing/dnstest"
	"github.com/distcache/distcache/internal/testing/poll"
)

// TestClusterFacePeersFromDNS: a gateway whose peers are a DNS name's A
// records (a headless Service's ready pods, from a real DNS server on
// loopback) shows them, each at its own port, and itself, sorted by
// address, from its first command on; it follows the records as they
// change, and shows itself alone when the name is gone. The peers' TEST-NET
// addresses are only shown, never reached.
func TestClusterFacePeersFromDNS(t *testing.T) {
	dns := dnstest.Start(t)
	const name = "shop-gateway-peers.shop.svc.test."
	dns.SetAll(name, "198.51.100.20", "198.51.100.10")
	ln := listenLoopback(t)
	self := netip.MustParseAddrPort(ln.Addr().String())
	cfg := gatewayConfig(clustertest.Start(t, smallCluster))
	cfg.Cluster = &gateway.ClusterFace{Announce: self, Refresh: 20 * time.Millisecond,
		Peers: gateway.DNSPeers{Name: name, Resolver: dns.Resolver()}}
	_, addr := serveGatewayOn(t, cfg, ln)
	rc := redisClient(t, addr, 2)
	port := self.Port()
	shown := func() (string, error) {
		slots, err := rc.ClusterSlots(t.Context()).Result()
		out := ""
		for _, s := range slots {
			for _, n := range s.Nodes {
				out += fmt.Sprintf("%d-%d %s %s;", s.Start, s.End, n.Addr, n.ID)
			}
		}
		return out, err
	}
	at := func(ip string) netip.AddrPort { return netip.AddrPortFrom(netip.MustParseAddr(ip), port) }
	want := func(ranges ...string) func() (bool, error) {
		return func() (bool, error) {
			got, err := shown()
			w := ""
			for i := 0; i < len(ranges); i += 2 {
				a := self
				if ranges[i+1] != "self" {
					a = at(ranges[i+1])
				}
				w += fmt.Sprintf("%s %s %s;", ranges[i], a, gateway.NodeID(a))
			}
			if got != w {
				return false, fmt.Errorf("CLUSTER SLOTS %q, want %q", got, w)
			}
			return true, err
		}
	}
	if ok, err := want("0-5460", "self", "5461-10921", "198.51.100.10", "10922-16383", "198.51.100.20")(); !ok {
		t.Fatalf("first command: %v", err)
	}
	dns.SetAll(name, "198.51.100.10")
	poll.Eventually(t, "a peer gone from DNS", want("0-8191", "self", "8192-16383", "198.51.100.10"))
	dns.SetAll(name)
	poll.Eventually(t, "the name gone", want("0-16383", "self"))
	dns.SetAll(name, "198.51.100.10", "127.0.0.1")
	poll.Eventually(t, "itself among the records", want("0-8191", "self", "8192-16383", "198.51.100.10"))
}
