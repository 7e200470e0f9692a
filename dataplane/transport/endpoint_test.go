package transport_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
)

// listen starts an endpoint on loopback that serves requests with h.
func listen(t testing.TB, h transport.Handler, opts ...func(*transport.Config)) *transport.Endpoint {
	t.Helper()
	cfg := transport.Config{Addr: "127.0.0.1:0"}
	for _, o := range opts {
		o(&cfg)
	}
	ep, err := transport.Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ep.Start(h)
	t.Cleanup(func() { _ = ep.Close() })
	return ep
}

func withDatagram(n int) func(*transport.Config) { return func(c *transport.Config) { c.Datagram = n } }

func withBatch(n int) func(*transport.Config) { return func(c *transport.Config) { c.Batch = n } }

func withRetransmit(d time.Duration) func(*transport.Config) {
	return func(c *transport.Config) { c.Retransmit = d }
}

// echo answers every request with its value.
func echo(out transport.Sender, src netip.AddrPort, req *wire.Message) {
	r := wire.Message{Header: req.Header, Key: req.Key, Value: req.Value}
	r.Op = req.Op.Reply()
	_ = out.Send(src, &r)
}

func TestCallRoundTrip(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), wire.MaxValueLen/16)
	tests := []struct {
		name     string
		datagram int
		value    []byte
	}{
		{"empty", 0, nil},
		{"small", 0, []byte("hello")},
		{"fragmented at the default size", 0, big[:100_000]},
		{"1 MiB at 64 KiB datagrams", wire.MaxDatagram, big},
		{"1 MiB at the default size", 0, big},
	}
	for _, tt := range tests {
		for _, batch := range []int{1, transport.DefaultBatch} {
			t.Run(fmt.Sprintf("%s/batch %d", tt.name, batch), func(t *testing.T) {
				testRoundTrip(t, tt.value, withDatagram(tt.datagram), withBatch(batch))
			})
		}
	}
}

func testRoundTrip(t *testing.T, value []byte, opts ...func(*transport.Config)) {
	server := listen(t, echo, opts...)
	client := listen(t, nil, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := wire.Message{Header: wire.Header{Op: wire.OpPut}, Key: []byte("k"), Value: value}
	rep, err := client.Call(ctx, server.Addr(), &req)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Op != wire.OpPutReply || rep.Seq != req.Seq || !bytes.Equal(rep.Value, value) {
		t.Fatalf("reply %v seq %d (want %d), %d value bytes (want %d)", rep.Op, rep.Seq, req.Seq, len(rep.Value), len(value))
	}
}

// dropTwice listens, passes every request received to record, drops the
// first two and echoes the others. record runs under a lock that locked
// holds too while it runs f: copies may still arrive after a call ends.
func dropTwice(t *testing.T, record func(*wire.Message)) (ep *transport.Endpoint, locked func(f func())) {
	var (
		mu sync.Mutex
		n  int
	)
	ep = listen(t, func(out transport.Sender, src netip.AddrPort, req *wire.Message) {
		mu.Lock()
		record(req)
		n++
		seen := n
		mu.Unlock()
		if seen < 3 {
			return
		}
		echo(out, src, req)
	})
	return ep, func(f func()) {
		mu.Lock()
		defer mu.Unlock()
		f()
	}
}

func TestCallRetransmitsWithSameSeq(t *testing.T) {
	var seqs []uint64
	ep, locked := dropTwice(t, func(req *wire.Message) { seqs = append(seqs, req.Seq) })
	client := listen(t, nil, withRetransmit(time.Millisecond))
	req := wire.Message{Header: wire.Header{Op: wire.OpGet}, Key: []byte("k")}
	if _, err := client.Call(context.Background(), ep.Addr(), &req); err != nil {
		t.Fatal(err)
	}
	locked(func() {
		for _, s := range seqs {
			if s != req.Seq {
				t.Fatalf("retransmission used seq %d, want %d", s, req.Seq)
			}
		}
	})
	if st := client.Stats(); st.Retransmits < 2 {
		t.Fatalf("Retransmits = %d, want >= 2", st.Retransmits)
	}
}

// TestRetransmissionsClearFlagFirst checks that only a write's first
// datagram carries wire.FlagFirst, while the bit, FlagCacheOnly on a GET,
// stays on every copy of a hedged read.
func TestRetransmissionsClearFlagFirst(t *testing.T) {
	tests := []struct {
		op         wire.Op
		laterFlags wire.Flag // on the retransmissions
	}{
		{wire.OpPut, 0},
		{wire.OpDel, 0},
		{wire.OpRMW, 0},
		{wire.OpGet, wire.FlagCacheOnly},
	}
	for _, tt := range tests {
		t.Run(tt.op.String(), func(t *testing.T) {
			var flags []wire.Flag
			ep, locked := dropTwice(t, func(req *wire.Message) { flags = append(flags, req.Flags&wire.FlagFirst) })
			client := listen(t, nil, withRetransmit(time.Millisecond))
			req := wire.Message{Header: wire.Header{Op: tt.op, Flags: wire.FlagFirst}, Key: []byte("k")}
			if _, err := client.Call(t.Context(), ep.Addr(), &req); err != nil {
				t.Fatal(err)
			}
			locked(func() {
				for i, f := range flags {
					want := tt.laterFlags
					if i == 0 {
						want = wire.FlagFirst
					}
					if f != want {
						t.Errorf("copy %d of %s: flags %#x, want %#x", i+1, tt.op, f, want)
					}
				}
			})
		})
	}
}

func TestCallContextEnds(t *testing.T) {
	silent := listen(t, func(transport.Sender, netip.AddrPort, *wire.Message) {})
	client := listen(t, nil, withRetransmit(time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := wire.Message{Header: wire.Header{Op: wire.OpGet}, Key: []byte("k")}
	_, err := client.Call(ctx, silent.Addr(), &req)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// TestCallUntilDeadline calls a peer that never answers with a deadline
// and no context deadline: the call sends the request, retransmits it
// while the deadline is ahead, and ends with context.DeadlineExceeded.
func TestCallUntilDeadline(t *testing.T) {
	seen := make(chan uint64, 64)
	silent := listen(t, func(_ transport.Sender, _ netip.AddrPort, req *wire.Message) {
		select {
		case seen <- req.Seq:
		default:
		}
	})
	client := listen(t, nil, withRetransmit(time.Millisecond))
	req := wire.Message{Header: wire.Header{Op: wire.OpGet}, Key: []byte("k")}
	_, err := client.CallUntil(context.Background(), time.Now().Add(50*time.Millisecond), silent.Addr(), &req)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
	if seq := <-seen; seq != req.Seq {
		t.Fatalf("the peer saw seq %d, want the call's %d", seq, req.Seq)
	}
	// A deadline already past still sends the request once.
	_, err = client.CallUntil(context.Background(), time.Now().Add(-time.Second), silent.Addr(), &req)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("past deadline: err = %v, want context.DeadlineExceeded", err)
	}
}

func TestReplyFromWrongPeerIsNotMatched(t *testing.T) {
	client := listen(t, nil)
	got := make(chan wire.Message, 1)
	target := listen(t, func(_ transport.Sender, _ netip.AddrPort, req *wire.Message) {
		got <- wire.Message{Header: req.Header, Key: bytes.Clone(req.Key)}
	})
	impostor := listen(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		req := wire.Message{Header: wire.Header{Op: wire.OpGet}, Key: []byte("k")}
		_, err := client.Call(ctx, target.Addr(), &req)
		done <- err
	}()
	req := <-got
	rep := wire.Message{Header: req.Header, Key: req.Key}
	rep.Op = wire.OpGetReply
	if err := impostor.Send(client.Addr(), &rep); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return client.Stats().UnmatchedReplies == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("call ended with %v, want context.Canceled (the impostor's reply must not match)", err)
	}
}

func TestMalformedDatagramsAreCountedAndDropped(t *testing.T) {
	server := listen(t, echo)
	raw, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(server.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	good, err := wire.Encode(&wire.Message{Header: wire.Header{Op: wire.OpGet}, Key: []byte("k")}, wire.DefaultDatagram)
	if err != nil {
		t.Fatal(err)
	}
	bad := [][]byte{{}, []byte("garbage"), good[:wire.HeaderLen-1], good[:len(good)-1], append(bytes.Clone(good), 'x')}
	for _, b := range bad {
		if _, err := raw.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, func() bool { return server.Stats().Malformed == uint64(len(bad)) })
	client := listen(t, nil)
	if _, err := client.Call(context.Background(), server.Addr(), &wire.Message{Header: wire.Header{Op: wire.OpGet}, Key: []byte("k")}); err != nil {
		t.Fatalf("server stopped serving after malformed input: %v", err)
	}
}

func TestListenRejectsBadDatagramSize(t *testing.T) {
	for _, n := range []int{wire.MinDatagram - 1, wire.MaxDatagram + 1} {
		if _, err := transport.Listen(transport.Config{Addr: "127.0.0.1:0", Datagram: n}); err == nil {
			t.Errorf("Listen accepted datagram size %d", n)
		}
	}
}

func TestCallAfterClose(t *testing.T) {
	ep, err := transport.Listen(transport.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ep.Start(nil)
	if err := ep.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = ep.Call(context.Background(), ep.Addr(), &wire.Message{Header: wire.Header{Op: wire.OpGet}, Key: []byte("k")})
	if !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
}

// waitFor polls cond until it holds, failing the test after a generous
// bound; it synchronises on an observable condition, not on elapsed time.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatal("condition not reached")
		}
	}
}

// TestAfterBatchFollowsEachBatch checks that a reader calls
// Config.AfterBatch once per receive batch, after handing its requests to
// the handler and, for a reader that queues its replies (Batch > 1),
// before they leave: such a reply arrives after the call.
func TestAfterBatchFollowsEachBatch(t *testing.T) {
	for _, batch := range []int{1, transport.DefaultBatch} {
		t.Run(fmt.Sprintf("batch %d", batch), func(t *testing.T) {
			var afterBatch atomic.Uint64
			calls := make(chan struct{}, 8)
			handler := func(out transport.Sender, src netip.AddrPort, req *wire.Message) {
				r := wire.Message{Header: req.Header, Key: req.Key}
				r.Op = req.Op.Reply()
				r.ValueVersion = afterBatch.Load() // calls so far
				_ = out.Send(src, &r)
			}
			server := listen(t, handler, withBatch(batch), func(c *transport.Config) {
				c.AfterBatch = func() { afterBatch.Add(1); calls <- struct{}{} }
			})
			client := listen(t, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			for i := range 3 {
				rep, err := client.Call(ctx, server.Addr(), &wire.Message{Header: wire.Header{Op: wire.OpGet}, Key: []byte("k")})
				if err != nil {
					t.Fatal(err)
				}
				if batch > 1 && afterBatch.Load() <= rep.ValueVersion {
					t.Fatalf("the reply left before AfterBatch was called for its batch")
				}
				select {
				case <-calls: // the request's batch, one datagram
				case <-ctx.Done():
					t.Fatalf("AfterBatch not called after request %d", i)
				}
			}
		})
	}
}

// Karn's rule: a call answered without a retransmission is a sample of
// its peer's round trip; one sent again is not.
func TestRTTFromReplies(t *testing.T) {
	var drop atomic.Bool
	server := listen(t, func(out transport.Sender, src netip.AddrPort, req *wire.Message) {
		if drop.Swap(false) {
			return // the first copy of a dropped request goes unanswered
		}
		echo(out, src, req)
	})
	client := listen(t, nil, withRetransmit(time.Millisecond))
	if _, _, ok := client.RTT(server.Addr()); ok {
		t.Fatal("an estimate before any call")
	}
	drop.Store(true)
	if _, err := client.Call(t.Context(), server.Addr(), &wire.Message{Header: wire.Header{Op: wire.OpGet}, Key: []byte("k")}); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := client.RTT(server.Addr()); ok {
		t.Fatal("a call sent again gave a sample")
	}
	if _, err := client.Call(t.Context(), server.Addr(), &wire.Message{Header: wire.Header{Op: wire.OpGet}, Key: []byte("k")}); err != nil {
		t.Fatal(err)
	}
	if srtt, _, ok := client.RTT(server.Addr()); !ok || srtt <= 0 {
		t.Fatalf("RTT after a clean call = %v, %v", srtt, ok)
	}
}
