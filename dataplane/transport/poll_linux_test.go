//go:build linux

package transport_test

import (
	"errors"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
)

// A polled endpoint receives nothing on its own: its calls are answered
// when, and on the goroutine where, its owner polls; requests sent to it
// reach its handler the same way.
func TestPollerReceivesForTheOwner(t *testing.T) {
	server := listen(t, echo)
	var served atomic.Int32
	polled := listen(t, func(out transport.Sender, src netip.AddrPort, req *wire.Message) {
		served.Add(1)
		echo(out, src, req)
	}, func(c *transport.Config) { c.Polled = true })
	p, err := polled.NewPoller()
	if err != nil {
		t.Fatal(err)
	}
	var done atomic.Bool
	var got []transport.Reply
	reqs := []transport.Request{
		{Dst: server.Addr(), Msg: &wire.Message{Header: wire.Header{Op: wire.OpGet}, Key: []byte("a")}},
		{Dst: server.Addr(), Msg: &wire.Message{Header: wire.Header{Op: wire.OpGet}, Key: []byte("b")}},
	}
	polled.CallManyFunc(time.Now().Add(time.Minute), reqs, func(out []transport.Reply) {
		got = out
		done.Store(true)
	})
	// The owner's loop: bounded in time, polling until the replies are in.
	for end := time.Now().Add(30 * time.Second); !done.Load() && time.Now().Before(end); {
		p.Poll()
	}
	if !done.Load() {
		t.Fatal("the calls were not answered while the owner polled")
	}
	for i, r := range got {
		if r.Err != nil || string(r.Msg.Key) != string(reqs[i].Msg.Key) || r.Msg.Op != wire.OpGetReply {
			t.Fatalf("reply %d = %+v, %v", i, r.Msg.Header, r.Err)
		}
	}
	// A request to the polled endpoint is served when it polls.
	if _, err := server.CallUntil(t.Context(), time.Now().Add(100*time.Millisecond), polled.Addr(),
		&wire.Message{Header: wire.Header{Op: wire.OpGet}, Key: []byte("c")}); err == nil {
		t.Fatal("a request to a polled endpoint that nobody polls was answered")
	}
	if served.Load() != 0 {
		t.Fatal("the polled endpoint's handler ran without a poll")
	}
	for end := time.Now().Add(30 * time.Second); served.Load() == 0 && time.Now().Before(end); {
		p.Poll()
	}
	if served.Load() == 0 {
		t.Fatal("the request never reached the handler through Poll")
	}
}

func TestNewPollerNeedsAPolledEndpoint(t *testing.T) {
	if _, err := listen(t, nil).NewPoller(); !errors.Is(err, transport.ErrNotPolled) {
		t.Fatalf("NewPoller of an endpoint with readers: %v, want ErrNotPolled", err)
	}
}
