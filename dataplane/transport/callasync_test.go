package transport_test

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
)

// callFunc runs CallManyFunc and waits for its one done call; a second
// call fails the test.
func callFunc(t *testing.T, e *transport.Endpoint, deadline time.Time, reqs []transport.Request) []transport.Reply {
	t.Helper()
	var calls atomic.Int32
	got := make(chan []transport.Reply, 2)
	e.CallManyFunc(deadline, reqs, func(out []transport.Reply) {
		calls.Add(1)
		got <- out
	})
	out := <-got
	if n := calls.Load(); n != 1 {
		t.Fatalf("done called %d times", n)
	}
	return out
}

func TestCallManyFuncOfNothing(t *testing.T) {
	client := listen(t, nil)
	if out := callFunc(t, client, time.Time{}, nil); len(out) != 0 {
		t.Fatalf("out = %v", out)
	}
}

// A server that ignores the first copy of each "resent" request answers
// the retransmission; "lost" requests end at the deadline, the others are
// answered; a closed endpoint, or one closed while the calls wait, ends
// them with ErrClosed.
func TestCallManyFuncUnanswered(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]bool{}
	server := listen(t, func(out transport.Sender, src netip.AddrPort, req *wire.Message) {
		key := string(req.Key)
		if strings.HasPrefix(key, "lost") {
			return
		}
		mu.Lock()
		first := !seen[key]
		seen[key] = true
		mu.Unlock()
		if strings.HasPrefix(key, "resent") && first {
			return
		}
		echo(out, src, req)
	})
	dst := []netip.AddrPort{server.Addr()}
	closed := listen(t, nil)
	_ = closed.Close()
	for _, tc := range []struct {
		name     string
		client   *transport.Endpoint
		deadline time.Time
		closeAt  time.Duration // close the client this long after the call (0: never)
		want     error
	}{
		{"deadline", listen(t, nil, withRetransmit(time.Millisecond)), time.Now().Add(300 * time.Millisecond), 0, context.DeadlineExceeded},
		{"endpoint closed", closed, time.Time{}, 0, transport.ErrClosed},
		{"endpoint closing", listen(t, nil, withRetransmit(time.Millisecond)), time.Time{}, 50 * time.Millisecond, transport.ErrClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			clear(seen)
			mu.Unlock()
			reqs := append(requests(dst, "lost", 3, noValue), requests(dst, "resent", 3, noValue)...)
			reqs = append(reqs, requests(dst, "kept", 3, noValue)...)
			if tc.closeAt > 0 {
				time.AfterFunc(tc.closeAt, func() { _ = tc.client.Close() })
			}
			out := callFunc(t, tc.client, tc.deadline, reqs)
			lost := func(i int) bool { return i < 3 || (errors.Is(tc.want, transport.ErrClosed) && tc.closeAt == 0) }
			checkOutcomes(t, reqs, out, tc.want, lost, tc.closeAt == 0)
		})
	}
}

// A batch stopped before its reply arrives never calls done: the reply,
// when it comes, is dropped, as a later call's answer on the same socket
// proves it has been read.
func TestCallManyFuncStopped(t *testing.T) {
	received := make(chan struct{})
	release := make(chan struct{})
	var first sync.Once
	server := listen(t, func(out transport.Sender, src netip.AddrPort, req *wire.Message) {
		if string(req.Key) == "held0" {
			first.Do(func() {
				close(received)
				<-release // answered only once the client has stopped the batch
			})
		}
		echo(out, src, req)
	})
	client := listen(t, nil)
	dst := []netip.AddrPort{server.Addr()}
	var calls atomic.Int32
	stop := client.CallManyFunc(time.Time{}, requests(dst, "held", 1, noValue), func([]transport.Reply) { calls.Add(1) })
	<-received
	stop()
	close(release)
	out := callFunc(t, client, time.Time{}, requests(dst, "after", 1, noValue))
	if out[0].Err != nil {
		t.Fatalf("a later call failed: %v", out[0].Err)
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("done of a stopped batch called %d times", n)
	}
	stop() // a second stop does nothing
}
