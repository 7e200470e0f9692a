package transport_test

import (
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"testing"

	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
)

// replyInPlace answers a request as a cache node answers a hit: it turns
// the request into its reply and sends it through the reader's batch.
func replyInPlace(out transport.Sender, src netip.AddrPort, req *wire.Message) {
	req.Op = req.Op.Reply()
	req.Flags |= wire.FlagHit
	_ = out.Send(src, req)
}

// rawClient is a plain UDP socket, so that tests control every datagram.
func rawClient(t *testing.T, network, addr string) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP(network, net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr)))
	if err != nil {
		t.Skipf("cannot open a %s socket on %s here: %v", network, addr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func getDatagram(t testing.TB, seq uint64) []byte {
	t.Helper()
	b, err := wire.Encode(&wire.Message{Header: wire.Header{Op: wire.OpGet, Seq: seq}, Key: []byte("key")}, wire.DefaultDatagram)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readReplies reads n replies on c, alone or in bundles, and returns how
// often each seq came.
func readReplies(t *testing.T, c *net.UDPConn, n int) map[uint64]int {
	t.Helper()
	seen := map[uint64]int{}
	buf := make([]byte, wire.MaxDatagram)
	for got := 0; got < n; {
		k, _, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := wire.AppendMessages(nil, buf[:k])
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			p, err := wire.Parse(r)
			if err != nil {
				t.Fatal(err)
			}
			if p.Op != wire.OpGetReply || string(p.Key) != "key" {
				t.Fatalf("reply %v key %q, want GET_REPLY for \"key\"", p.Op, p.Key)
			}
			seen[p.Seq]++
			got++
		}
	}
	return seen
}

// TestBatchReadsQueuedDatagramsTogether queues requests before the readers
// start, so that one receive call can take a whole batch of them.
func TestBatchReadsQueuedDatagramsTogether(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("batching needs recvmmsg, a Linux call")
	}
	const requests = 64
	tests := []struct {
		batch                    int
		minReceives, maxReceives uint64
	}{
		{batch: 1, minReceives: requests, maxReceives: requests},
		{batch: 32, minReceives: 2, maxReceives: requests - 1},
		{batch: 128, minReceives: 1, maxReceives: requests - 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("batch %d", tt.batch), func(t *testing.T) {
			server, err := transport.Listen(transport.Config{Addr: "127.0.0.1:0", Batch: tt.batch, Bundle: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = server.Close() })
			client := rawClient(t, "udp4", "127.0.0.1:0")
			for seq := range uint64(requests) {
				if _, err := client.WriteToUDPAddrPort(getDatagram(t, seq), server.Addr()); err != nil {
					t.Fatal(err)
				}
			}
			server.Start(replyInPlace)
			seen := readReplies(t, client, requests)
			for seq := range uint64(requests) {
				if seen[seq] != 1 {
					t.Fatalf("seq %d answered %d times, want once", seq, seen[seq])
				}
			}
			// The counters follow the send call the client may outrun.
			waitFor(t, func() bool { s := server.Stats(); return s.MessagesOut() == requests })
			s := server.Stats()
			if s.DatagramsIn != requests || s.MessagesOut() != requests || s.SendErrors != 0 {
				t.Fatalf("stats %+v, want %d datagrams in and %d replies out", s, requests, requests)
			}
			// A batch's replies to the one client leave as bundles.
			if tt.batch > 1 && (s.BundlesOut == 0 || s.DatagramsOut >= requests) {
				t.Fatalf("stats %+v: %d replies to one client in %d datagrams, want bundles", s, requests, s.DatagramsOut)
			}
			if s.Receives < tt.minReceives || s.Receives > tt.maxReceives {
				t.Fatalf("%d receive calls for %d queued datagrams at batch %d, want %d…%d",
					s.Receives, requests, tt.batch, tt.minReceives, tt.maxReceives)
			}
		})
	}
}

// TestBatchAddressesBothFamilies replies from IPv4, IPv6 and dual-stack
// sockets, whose replies need sockaddrs of different formats.
func TestBatchAddressesBothFamilies(t *testing.T) {
	tests := []struct {
		name, server, client, network string
	}{
		{"IPv4", "127.0.0.1:0", "127.0.0.1:0", "udp4"},
		{"IPv6", "[::1]:0", "[::1]:0", "udp6"},
		{"IPv4 peer of a dual-stack socket", "[::]:0", "127.0.0.1:0", "udp4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := rawClient(t, tt.network, tt.client)
			srcs := make(chan netip.AddrPort, 1)
			server, err := transport.Listen(transport.Config{Addr: tt.server})
			if err != nil {
				t.Skipf("cannot listen on %s here: %v", tt.server, err)
			}
			t.Cleanup(func() { _ = server.Close() })
			server.Start(func(out transport.Sender, src netip.AddrPort, req *wire.Message) {
				srcs <- src
				replyInPlace(out, src, req)
			})
			caddr := client.LocalAddr().(*net.UDPAddr).AddrPort()
			dst := netip.AddrPortFrom(caddr.Addr(), server.Addr().Port())
			if _, err := client.WriteToUDPAddrPort(getDatagram(t, 7), dst); err != nil {
				t.Fatal(err)
			}
			if got := <-srcs; got != caddr {
				t.Fatalf("handler saw source %v, want %v", got, caddr)
			}
			if seen := readReplies(t, client, 1); seen[7] != 1 {
				t.Fatalf("replies %v, want seq 7", seen)
			}
		})
	}
}

// TestBatchSkipsAFailedReply checks that a reply the kernel refuses is
// counted and does not hold back the rest of its batch.
func TestBatchSkipsAFailedReply(t *testing.T) {
	server := listen(t, func(out transport.Sender, src netip.AddrPort, req *wire.Message) {
		bad := *req
		bad.Op = bad.Op.Reply()
		_ = out.Send(netip.MustParseAddrPort("127.0.0.1:0"), &bad) // port 0: EINVAL
		replyInPlace(out, src, req)
	})
	client := rawClient(t, "udp4", "127.0.0.1:0")
	if _, err := client.WriteToUDPAddrPort(getDatagram(t, 3), server.Addr()); err != nil {
		t.Fatal(err)
	}
	if seen := readReplies(t, client, 1); seen[3] != 1 {
		t.Fatalf("replies %v, want seq 3", seen)
	}
	waitFor(t, func() bool { return server.Stats().DatagramsOut == 1 })
	if s := server.Stats(); s.SendErrors != 1 || s.DatagramsOut != 1 {
		t.Fatalf("SendErrors %d, DatagramsOut %d; want 1 and 1", s.SendErrors, s.DatagramsOut)
	}
}

// TestServeDoesNotAllocate measures a request's round trip through a real
// socket: the client's write and read, the reader's receive, handler and
// reply. AllocsPerRun counts every goroutine's allocations, so a rare
// allocation of the runtime itself shows up as a fraction.
func TestServeDoesNotAllocate(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	for _, batch := range []int{1, transport.DefaultBatch} {
		t.Run(fmt.Sprintf("batch %d", batch), func(t *testing.T) {
			server := listen(t, replyInPlace, withBatch(batch))
			client := rawClient(t, "udp4", "127.0.0.1:0")
			req, buf := getDatagram(t, 1), make([]byte, wire.MaxDatagram)
			roundTrip := func() {
				if _, err := client.WriteToUDPAddrPort(req, server.Addr()); err != nil {
					t.Fatal(err)
				}
				if _, _, err := client.ReadFromUDPAddrPort(buf); err != nil {
					t.Fatal(err)
				}
			}
			roundTrip()
			runtime.GC()
			if allocs := testing.AllocsPerRun(1000, roundTrip); allocs >= 0.1 {
				t.Fatalf("%.3f allocations per request, want 0", allocs)
			}
		})
	}
}

func TestListenRejectsHugeBatch(t *testing.T) {
	if _, err := transport.Listen(transport.Config{Addr: "127.0.0.1:0", Batch: transport.MaxBatch + 1}); err == nil {
		t.Fatal("Listen accepted a batch above MaxBatch")
	}
}
