package gateway_test

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/distcache/distcache/gateway"
	"github.com/distcache/distcache/internal/testing/clustertest"
	"github.com/distcache/distcache/internal/testing/redistest"
)

// TestClusterCommandsWithoutFace: without a cluster face (the default),
// the cluster commands get byte for byte what a redis-server without
// cluster support answers, over RESP2 and RESP3: its error, its errors
// for an unknown subcommand and a wrong number of arguments, and INFO's
// cluster_enabled:0.
func TestClusterCommandsWithoutFace(t *testing.T) {
	addr, _ := startGateway(t)
	ref := redistest.Start(t)
	commands := [][]string{
		{"cluster", "slots"}, {"CLUSTER", "SHARDS"}, {"cluster", "nodes"}, {"cluster", "info"},
		{"cluster", "myid"}, {"cluster", "keyslot", "user:{42}"}, {"cluster", "countkeysinslot", "7"},
		{"cluster", "getkeysinslot", "7", "10"}, {"cluster", "help"}, {"cluster", "links"},
		{"cluster", "addslots", "1", "2"}, {"cluster", "meet", "127.0.0.1", "7000"},
		{"cluster", "nosuch"}, {"cluster"}, {"cluster", "slots", "extra"}, {"cluster", "keyslot"},
		{"cluster", "getkeysinslot", "7"}, {"cluster", "setslot", "1"},
		{"readonly"}, {"READWRITE"}, {"asking"}, {"readonly", "extra"},
		{"info", "cluster"},
	}
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			gw, rs := dialRESP(t, addr), dialRESP(t, ref.Addr())
			if proto == 3 {
				gw.do([]string{"hello", "3"})
				rs.do([]string{"hello", "3"})
			}
			for _, args := range commands {
				if want, got := rs.do(args), gw.do(args); string(want) != string(got) {
					t.Errorf("%q:\n redis-server: %q\n gateway:      %q", args, want, got)
				}
			}
		})
	}
}

// TestKeySlot checks KeySlot, and CLUSTER KEYSLOT through a gateway with a
// cluster face, against a redis-server in cluster mode: keys with and
// without hash tags, empty and unbalanced tags, binary keys, and random
// ones; and against CRC-16/XMODEM's check value.
func TestKeySlot(t *testing.T) {
	if got := gateway.KeySlot([]byte("123456789")); got != 0x31c3%gateway.ClusterSlots {
		t.Errorf("KeySlot(123456789) = %d, want CRC-16/XMODEM's check value 0x31c3 mod 16384", got)
	}
	keys := []string{
		"", "a", "foo", "123456789", "user:1000", "{user1000}.following", "{user1000}.followers",
		"foo{}{bar}", "foo{{bar}}zap", "foo{bar}{zap}", "{}", "{", "}", "}{", "{a", "a}", "{}a{b}",
		"{a}", "x{a}y", "{{}}", "a{b}c{d}", "\x00\xff{\x01}", "{\xff\xfe}", "\r\n{\r\n}", "{ }",
		strings.Repeat("k", 512), "{" + strings.Repeat("t", 300) + "}",
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		b := make([]byte, 1+r.IntN(24))
		for j := range b {
			b[j] = byte(r.UintN(256))
			if r.IntN(6) == 0 {
				b[j] = "{}"[r.IntN(2)]
			}
		}
		keys = append(keys, string(b), "key:"+strconv.Itoa(i), "{tag"+strconv.Itoa(i%17)+"}:"+strconv.Itoa(i))
	}
	ref := redistest.Start(t, redistest.WithArgs("--cluster-enabled", "yes"))
	rs := dialRESP(t, ref.Addr())
	addr := startFaceGateway(t)
	gw := dialRESP(t, addr)
	for _, k := range keys {
		want := rs.do([]string{"cluster", "keyslot", k})
		if got := []byte(fmt.Sprintf(":%d\r\n", gateway.KeySlot([]byte(k)))); string(got) != string(want) {
			t.Errorf("KeySlot(%q) = %q, redis-server: %q", k, got, want)
		}
		if got := gw.do([]string{"cluster", "keyslot", k}); string(got) != string(want) {
			t.Errorf("gateway's CLUSTER KEYSLOT %q = %q, redis-server: %q", k, got, want)
		}
	}
}

// startFaceGateway starts a gateway with a cluster face, alone, on a real
// cluster, and returns its address.
func startFaceGateway(t *testing.T) string {
	t.Helper()
	ln := listenLoopback(t)
	cfg := gatewayConfig(clustertest.Start(t, smallCluster))
	cfg.Cluster = &gateway.ClusterFace{Announce: netip.MustParseAddrPort(ln.Addr().String())}
	_, addr := serveGatewayOn(t, cfg, ln)
	return addr
}

// TestClusterFaceAnnouncesIPv4 announces an IPv4 address given in its
// IPv6-mapped form as the IPv4 address, the form clients connect to, and
// derives the node id from that.
func TestClusterFaceAnnouncesIPv4(t *testing.T) {
	ln := listenLoopback(t)
	self := netip.MustParseAddrPort(ln.Addr().String())
	cfg := gatewayConfig(clustertest.Start(t, smallCluster))
	cfg.Cluster = &gateway.ClusterFace{Announce: netip.AddrPortFrom(netip.AddrFrom16(self.Addr().As16()), self.Port())}
	_, addr := serveGatewayOn(t, cfg, ln)
	gw := dialRESP(t, addr)
	want := fmt.Sprintf("*1\r\n*3\r\n:0\r\n:16383\r\n*4\r\n$9\r\n127.0.0.1\r\n:%d\r\n$40\r\n%s\r\n*0\r\n", self.Port(), gateway.NodeID(self))
	if got := gw.do([]string{"cluster", "slots"}); string(got) != want {
		t.Errorf("CLUSTER SLOTS = %q, want %q", got, want)
	}
}
