//go:build linux

package transport_test

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
)

// inOneBatch runs try, which starts a server whose socket already holds
// datagrams, until the server's reader received them in one batch, and
// then reports try's verdict (a non-empty failure). A loopback send queues
// its datagram before it returns, so the first try is normally the one.
func inOneBatch(t *testing.T, try func(t *testing.T) (*transport.Endpoint, string)) {
	t.Helper()
	for range 10 {
		server, failure := try(t)
		if server.Stats().Receives != 1 {
			continue // the datagrams came in two receives: the premise failed, not the server
		}
		if failure != "" {
			t.Fatal(failure)
		}
		return
	}
	t.Fatal("the queued datagrams never arrived in one receive")
}

// queuedServer is an endpoint whose socket holds datagrams, sent by the
// returned client, before its reader starts.
func queuedServer(t *testing.T, cfg transport.Config, datagrams ...[]byte) (*transport.Endpoint, *net.UDPConn) {
	t.Helper()
	cfg.Addr = "127.0.0.1:0"
	server, err := transport.Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Close() })
	client := rawClient(t, "udp4", "127.0.0.1:0")
	for _, b := range datagrams {
		if _, err := client.WriteToUDPAddrPort(b, server.Addr()); err != nil {
			t.Fatal(err)
		}
	}
	return server, client
}

func datagram(t *testing.T, op wire.Op, seq uint64) []byte {
	t.Helper()
	b, err := wire.Encode(&wire.Message{Header: wire.Header{Op: op, Seq: seq}, Key: []byte("key")}, wire.DefaultDatagram)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestUrgentServedFirst checks Config.Urgent: within a receive batch the
// urgent requests are served first, the others after them in the order
// they arrived, and each datagram exactly once.
func TestUrgentServedFirst(t *testing.T) {
	urgent := func(op wire.Op) bool { return op == wire.OpInvalidate }
	inOneBatch(t, func(t *testing.T) (*transport.Endpoint, string) {
		server, _ := queuedServer(t, transport.Config{Urgent: urgent},
			datagram(t, wire.OpGet, 1), datagram(t, wire.OpInvalidate, 2), datagram(t, wire.OpGet, 3),
			[]byte("not a datagram"), datagram(t, wire.OpInvalidate, 4), datagram(t, wire.OpGet, 5))
		seqs := make(chan uint64, 5)
		server.Start(func(_ transport.Sender, _ netip.AddrPort, req *wire.Message) { seqs <- req.Seq })
		var got []uint64
		for range 5 {
			got = append(got, <-seqs)
		}
		waitFor(t, func() bool { return server.Stats().Malformed == 1 })
		if want := []uint64{2, 4, 1, 3, 5}; !slices.Equal(got, want) {
			return server, fmt.Sprintf("served %v, want %v (the INVALIDATEs 2 and 4 first)", got, want)
		}
		if s := server.Stats(); s.DatagramsIn != 6 {
			return server, fmt.Sprintf("DatagramsIn %d, want 6 (each datagram counted once)", s.DatagramsIn)
		}
		return server, ""
	})
}

// TestFlushSendsTheBatchSoFar checks that a handler about to block can send
// the replies its batch has finished: the first request's reply reaches
// the client while the handler of the second one is still blocked.
func TestFlushSendsTheBatchSoFar(t *testing.T) {
	inOneBatch(t, func(t *testing.T) (*transport.Endpoint, string) {
		server, client := queuedServer(t, transport.Config{}, getDatagram(t, 1), getDatagram(t, 2))
		release := make(chan struct{})
		var once sync.Once
		unblock := func() { once.Do(func() { close(release) }) }
		t.Cleanup(unblock) // before the server's Close, which waits for the handler
		server.Start(func(out transport.Sender, src netip.AddrPort, req *wire.Message) {
			if req.Seq == 2 {
				out.(interface{ Flush() }).Flush()
				<-release
			}
			replyInPlace(out, src, req)
		})
		// Without the flush the first reply would wait for the blocked
		// handler, and this read would fail at its deadline.
		if err := client.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
			t.Fatal(err)
		}
		first := readReplies(t, client, 1)
		unblock()
		if second := readReplies(t, client, 1); first[1] != 1 || second[2] != 1 {
			return server, fmt.Sprintf("replies %v then %v, want seq 1 then seq 2", first, second)
		}
		return server, ""
	})
}

// TestUrgentServedFirstInBundles checks Config.Urgent across bundles: the
// urgent records of every bundle in a receive batch are served before the
// batch's other messages, which keep their order.
func TestUrgentServedFirstInBundles(t *testing.T) {
	urgent := func(op wire.Op) bool { return op == wire.OpInvalidate }
	inOneBatch(t, func(t *testing.T) (*transport.Endpoint, string) {
		server, _ := queuedServer(t, transport.Config{Urgent: urgent},
			wire.AppendBundle(nil, datagram(t, wire.OpGet, 1), datagram(t, wire.OpInvalidate, 2)),
			datagram(t, wire.OpGet, 3),
			wire.AppendBundle(nil, datagram(t, wire.OpInvalidate, 4), datagram(t, wire.OpGet, 5)))
		got := until(t, servedSeqs(server), 5)
		if want := []uint64{2, 4, 1, 3, 5}; !slices.Equal(got, want) {
			return server, fmt.Sprintf("served %v, want [2 4 1 3 5] (the INVALIDATEs first)", got)
		}
		if s := server.Stats(); s.DatagramsIn != 3 || s.BundlesIn != 2 || s.BundledIn != 4 {
			return server, "each datagram and bundle is counted once"
		}
		return server, ""
	})
}
