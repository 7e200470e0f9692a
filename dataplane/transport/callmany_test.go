package transport_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
)

// requests returns n GETs of keys prefix0, prefix1, … sent to dsts in
// turn, the one of index i carrying value(i).
func requests(dsts []netip.AddrPort, prefix string, n int, value func(i int) []byte) []transport.Request {
	reqs := make([]transport.Request, n)
	for i := range reqs {
		m := &wire.Message{Header: wire.Header{Op: wire.OpGet}, Key: fmt.Appendf(nil, "%s%d", prefix, i), Value: value(i)}
		reqs[i] = transport.Request{Dst: dsts[i%len(dsts)], Msg: m}
	}
	return reqs
}

func noValue(int) []byte { return nil }

// checkEcho checks that r is the echo of request req.
func checkEcho(t *testing.T, i int, r transport.Reply, req transport.Request) {
	t.Helper()
	if r.Err != nil || r.Msg.Op != wire.OpGetReply || r.Msg.Seq != req.Msg.Seq ||
		!bytes.Equal(r.Msg.Key, req.Msg.Key) || !bytes.Equal(r.Msg.Value, req.Msg.Value) {
		t.Fatalf("reply %d = %v seq %d key %q, %d bytes, %v; want the echo of seq %d key %q",
			i, r.Msg.Op, r.Msg.Seq, r.Msg.Key, len(r.Msg.Value), r.Err, req.Msg.Seq, req.Msg.Key)
	}
}

func TestCallManyAnswersEach(t *testing.T) {
	a, b := listen(t, echo), listen(t, echo)
	tests := []struct {
		name  string
		n     int
		value func(i int) []byte
	}{
		{"one", 1, noValue},
		{"a pipeline's worth", 16, noValue},
		{"more than a send queue", 3*transport.DefaultBatch + 5, noValue},
		{"with values of several datagrams and windows", 12, func(i int) []byte { return bigValue[:i*i*8000] }},
	}
	// The same requests through the call that waits and the one that
	// does not (callasync_test.go).
	apis := []struct {
		name string
		call func(t *testing.T, client *transport.Endpoint, reqs []transport.Request) []transport.Reply
	}{
		{"CallMany", func(t *testing.T, client *transport.Endpoint, reqs []transport.Request) []transport.Reply {
			out := make([]transport.Reply, len(reqs))
			client.CallMany(t.Context(), time.Now().Add(time.Minute), reqs, out)
			return out
		}},
		{"CallManyFunc", func(t *testing.T, client *transport.Endpoint, reqs []transport.Request) []transport.Reply {
			return callFunc(t, client, time.Now().Add(time.Minute), reqs)
		}},
	}
	for _, api := range apis {
		for _, tc := range tests {
			t.Run(api.name+"/"+tc.name, func(t *testing.T) {
				client := listen(t, nil)
				reqs := requests([]netip.AddrPort{a.Addr(), b.Addr()}, "k", tc.n, tc.value)
				for i, r := range api.call(t, client, reqs) {
					checkEcho(t, i, r, reqs[i])
				}
			})
		}
	}
}

// TestCallManyOfNothing checks that a call of no requests returns at
// once, not at its deadline.
func TestCallManyOfNothing(t *testing.T) {
	client := listen(t, nil)
	done := make(chan struct{})
	go func() {
		client.CallMany(t.Context(), time.Time{}, nil, nil) // no deadline: a wait would never end
		close(done)
	}()
	<-done
}

// TestCallManySendsTogether checks that requests of one datagram leave in
// as many sendmmsg calls as the send queue needs, not one each.
func TestCallManySendsTogether(t *testing.T) {
	server := listen(t, echo)
	client := listen(t, nil)
	const n = 2*transport.DefaultBatch + 1
	reqs := requests([]netip.AddrPort{server.Addr()}, "k", n, noValue)
	out := make([]transport.Reply, n)
	client.CallMany(t.Context(), time.Time{}, reqs, out)
	for i, r := range out {
		checkEcho(t, i, r, reqs[i])
	}
	if s := client.Stats(); s.DatagramsOut != n || s.Sends != 3 {
		t.Errorf("%d datagrams in %d system calls, want %d in 3", s.DatagramsOut, s.Sends, n)
	}
}

// TestCallManyUnanswered checks the outcomes of requests that get no
// reply: each fails with the reason the wait ended; the others are
// answered, or fail so too when the wait ended before their replies were
// read.
func TestCallManyUnanswered(t *testing.T) {
	server := listen(t, func(out transport.Sender, src netip.AddrPort, req *wire.Message) {
		if !strings.HasPrefix(string(req.Key), "lost") {
			echo(out, src, req)
		}
	})
	closed := listen(t, nil)
	_ = closed.Close()
	tests := []struct {
		name     string
		client   *transport.Endpoint
		ctx      func() context.Context
		deadline time.Time
		want     error
	}{
		{"deadline", listen(t, nil, withRetransmit(time.Millisecond)), t.Context, time.Now().Add(50 * time.Millisecond), context.DeadlineExceeded},
		{"context cancelled", listen(t, nil), func() context.Context {
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(50*time.Millisecond, cancel)
			return ctx
		}, time.Time{}, context.Canceled},
		{"endpoint closed", closed, t.Context, time.Time{}, transport.ErrClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := []netip.AddrPort{server.Addr()}
			reqs := append(requests(dst, "lost", 3, noValue), requests(dst, "kept", 3, noValue)...)
			out := make([]transport.Reply, len(reqs))
			tc.client.CallMany(tc.ctx(), tc.deadline, reqs, out)
			lost := func(i int) bool { return i < 3 || errors.Is(tc.want, transport.ErrClosed) }
			checkOutcomes(t, reqs, out, tc.want, lost, false)
		})
	}
}

// checkOutcomes checks out, the outcomes of reqs: an error must wrap want;
// a lost(i) request must get no reply, another one its echo, and with
// answered it must not fail either.
func checkOutcomes(t *testing.T, reqs []transport.Request, out []transport.Reply, want error, lost func(i int) bool, answered bool) {
	t.Helper()
	for i, r := range out {
		switch {
		case r.Err != nil && !errors.Is(r.Err, want):
			t.Errorf("request %d (key %q): error %v, want %v", i, reqs[i].Msg.Key, r.Err, want)
		case r.Err == nil && lost(i):
			t.Errorf("request %d (key %q): reply for key %q, want none", i, reqs[i].Msg.Key, r.Msg.Key)
		case r.Err == nil:
			checkEcho(t, i, r, reqs[i])
		case answered && !lost(i):
			t.Errorf("request %d (key %q): %v, want its echo", i, reqs[i].Msg.Key, r.Err)
		}
	}
}

// TestSendManySendsTogether checks that SendMany's messages leave in one
// system call per batch and, with bundles, in one bundle, each served
// alone with its own sequence number; and that a closed endpoint refuses.
func TestSendManySendsTogether(t *testing.T) {
	tests := []struct {
		name               string
		bundle             bool
		datagrams, bundles uint64
	}{
		{"a datagram each", false, 4, 0},
		{"bundled", true, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			server, seqs := listenServed(t)
			client := listen(t, nil, func(c *transport.Config) { c.Bundle = tt.bundle })
			reqs := requests([]netip.AddrPort{server.Addr()}, "k", 4, noValue)
			for i := range reqs {
				reqs[i].Msg.Seq = uint64(100 + i)
			}
			if err := client.SendMany(reqs); err != nil {
				t.Fatal(err)
			}
			if got := until(t, seqs, 103); !slices.Equal(got, []uint64{100, 101, 102, 103}) {
				t.Errorf("served %v, want 100…103 in order", got)
			}
			if s := client.Stats(); s.DatagramsOut != tt.datagrams || s.BundlesOut != tt.bundles || s.Sends != 1 {
				t.Errorf("%d datagrams (%d bundles) in %d system calls, want %d (%d) in 1", s.DatagramsOut, s.BundlesOut, s.Sends, tt.datagrams, tt.bundles)
			}
			_ = client.Close()
			if err := client.SendMany(reqs); !errors.Is(err, transport.ErrClosed) {
				t.Errorf("SendMany after Close: %v, want ErrClosed", err)
			}
		})
	}
}
