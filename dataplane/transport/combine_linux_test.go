//go:build linux

package transport

import (
	"net"
	"sync"
	"testing"

	"github.com/distcache/distcache/dataplane/wire"
)

// combinerPeer is an endpoint that sends (bundling or not) and a plain
// socket that receives.
func combinerPeer(t *testing.T, bundle bool) (*Endpoint, *net.UDPConn) {
	t.Helper()
	ep, err := Listen(Config{Addr: "127.0.0.1:0", Bundle: bundle})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ep.Close() })
	if ep.comb == nil {
		t.Fatal("a batching endpoint has no combiner")
	}
	rx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	_ = rx.SetReadBuffer(4 << 20)
	t.Cleanup(func() { _ = rx.Close() })
	return ep, rx
}

func reply(seq uint64) *wire.Message {
	return &wire.Message{Header: wire.Header{Op: wire.OpGetReply, Seq: seq}, Key: []byte("key"), Value: []byte("value")}
}

// receive reads datagrams until n messages came, splitting bundles, and
// returns how often each seq came.
func receive(t *testing.T, rx *net.UDPConn, n int) map[uint64]int {
	t.Helper()
	seen := map[uint64]int{}
	buf := make([]byte, wire.MaxDatagram)
	for got := 0; got < n; {
		k, _, err := rx.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := wire.AppendMessages(nil, buf[:k])
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			p, err := wire.Parse(r)
			if err != nil || p.Op != wire.OpGetReply || string(p.Fragment) != "value" {
				t.Fatalf("datagram %v %q: %v", p.Op, p.Fragment, err)
			}
			seen[p.Seq]++
			got++
		}
	}
	return seen
}

// TestCombinerLeavesDatagramsToTheSender sends while another goroutine is
// (as the test pretends) sending: the datagrams wait in the queue, and the
// next Send that finds no sender sends all of them with one sendmmsg — in
// one bundle, as they go to the same peer, unless bundling is off.
func TestCombinerLeavesDatagramsToTheSender(t *testing.T) {
	const queued = 10
	for _, c := range []struct {
		name                          string
		bundle                        bool
		datagrams, bundles, inBundles uint64
	}{
		{"bundled", true, 1, 1, queued + 1},
		{"one message per datagram", false, queued + 1, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			ep, rx := combinerPeer(t, c.bundle)
			dst := rx.LocalAddr().(*net.UDPAddr).AddrPort()
			ep.comb.mu.Lock()
			ep.comb.sending = true
			ep.comb.mu.Unlock()
			for seq := range uint64(queued) {
				if err := ep.Send(dst, reply(seq)); err != nil {
					t.Fatal(err)
				}
			}
			if s := ep.Stats(); s.Sends != 0 || s.DatagramsOut != 0 {
				t.Fatalf("stats %+v while another goroutine sends, want nothing sent yet", s)
			}
			ep.comb.mu.Lock()
			ep.comb.sending = false
			ep.comb.mu.Unlock()
			if err := ep.Send(dst, reply(queued)); err != nil {
				t.Fatal(err)
			}
			seen := receive(t, rx, queued+1)
			for seq := range uint64(queued + 1) {
				if seen[seq] != 1 {
					t.Fatalf("seq %d came %d times, want once", seq, seen[seq])
				}
			}
			s := ep.Stats()
			if s.Sends != 1 || s.DatagramsOut != c.datagrams || s.BundlesOut != c.bundles || s.BundledOut != c.inBundles || s.SendErrors != 0 {
				t.Fatalf("stats %+v, want %d datagrams (%d bundles of %d messages) in one send call", s, c.datagrams, c.bundles, c.inBundles)
			}
		})
	}
}

// TestCombinerBundlesStayWithinTheDatagramSize queues more messages for one
// peer than one datagram holds: they leave in as many bundles as they
// need, none longer than the endpoint's datagram size, and every message
// arrives once.
func TestCombinerBundlesStayWithinTheDatagramSize(t *testing.T) {
	ep, rx := combinerPeer(t, true)
	dst := rx.LocalAddr().(*net.UDPAddr).AddrPort()
	ep.comb.mu.Lock()
	ep.comb.sending = true
	ep.comb.mu.Unlock()
	const n = 100 // 100 replies of 76 bytes: 7,800 bytes with their prefixes
	for seq := range uint64(n) {
		if err := ep.Send(dst, reply(seq)); err != nil {
			t.Fatal(err)
		}
	}
	ep.comb.mu.Lock()
	ep.comb.drain()
	seen := receive(t, rx, n)
	if len(seen) != n {
		t.Fatalf("%d distinct messages, want %d", len(seen), n)
	}
	s := ep.Stats()
	if s.BundledOut != n || s.BundlesOut != s.DatagramsOut || s.BundlesOut < 6 {
		t.Fatalf("stats %+v, want %d messages in at least 6 bundles", s, n)
	}
	if limit := uint64(ep.Datagram()) * s.DatagramsOut; s.BytesOut > limit {
		t.Fatalf("%d bytes in %d datagrams: some bundle is over %d bytes", s.BytesOut, s.DatagramsOut, ep.Datagram())
	}
}

// TestCombinerFullQueueSendsDirectly checks that a Send that finds the
// queue full sends its datagram itself instead of waiting.
func TestCombinerFullQueueSendsDirectly(t *testing.T) {
	ep, rx := combinerPeer(t, false) // bundled, the datagrams to one peer would share slots
	dst := rx.LocalAddr().(*net.UDPAddr).AddrPort()
	ep.comb.mu.Lock()
	ep.comb.sending = true
	ep.comb.mu.Unlock()
	full := len(ep.comb.pending.out)
	for seq := range uint64(full + 1) {
		if err := ep.Send(dst, reply(seq)); err != nil {
			t.Fatal(err)
		}
	}
	// The one beyond the queue went out at once.
	if seen := receive(t, rx, 1); seen[uint64(full)] != 1 {
		t.Fatalf("got %v, want seq %d, sent directly", seen, full)
	}
	// The sender the test pretended to be drains the queue.
	ep.comb.mu.Lock()
	ep.comb.drain()
	if seen := receive(t, rx, full); len(seen) != full {
		t.Fatalf("got %d distinct datagrams, want %d", len(seen), full)
	}
}

// TestCombinerConcurrentSends sends from many goroutines at once: every
// datagram arrives once, whoever sent it.
func TestCombinerConcurrentSends(t *testing.T) {
	ep, rx := combinerPeer(t, true)
	dst := rx.LocalAddr().(*net.UDPAddr).AddrPort()
	const senders, each = 16, 50
	var wg sync.WaitGroup
	for g := range uint64(senders) {
		wg.Go(func() {
			for i := range uint64(each) {
				if err := ep.Send(dst, reply(g*each+i)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	seen := receive(t, rx, senders*each)
	wg.Wait()
	if len(seen) != senders*each {
		t.Fatalf("%d distinct datagrams, want %d", len(seen), senders*each)
	}
	s := ep.Stats()
	if msgs := s.DatagramsOut - s.BundlesOut + s.BundledOut; msgs != senders*each || s.SendErrors != 0 || s.Sends == 0 || s.Sends > s.DatagramsOut {
		t.Fatalf("stats %+v, want %d messages out in at most as many send calls as datagrams", s, senders*each)
	}
}
