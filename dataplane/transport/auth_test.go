package transport_test

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/dataplane/wireauth"
)

var (
	clusterKey = []byte("cluster-key-0123456789abcdef")
	otherKey   = []byte("another-key-0123456789abcdef")
)

func withAuth(t testing.TB, current, previous []byte) func(*transport.Config) {
	t.Helper()
	k, err := wireauth.New(current, previous)
	if err != nil {
		t.Fatal(err)
	}
	return func(c *transport.Config) { c.Auth = k }
}

func noOpt(*transport.Config) {}

// withReplay keys an endpoint with clusterKey and sets its replay mode.
func withReplay(t testing.TB, mode transport.ReplayMode) func(*transport.Config) {
	t.Helper()
	auth := withAuth(t, clusterKey, nil)
	return func(c *transport.Config) { auth(c); c.Replay = mode }
}

func TestAuthenticatedRoundTrip(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 100_000/16)
	for _, batch := range []int{1, transport.DefaultBatch} {
		for _, value := range [][]byte{nil, []byte("hello"), big} {
			for _, mode := range []transport.ReplayMode{transport.ReplayAccept, transport.ReplayRequire} {
				t.Run(fmt.Sprintf("batch %d/%d bytes/replay=%v", batch, len(value), mode), func(t *testing.T) {
					testRoundTrip(t, value, withReplay(t, mode), withBatch(batch))
				})
			}
		}
	}
}

// TestMACEnforced sends one datagram to a receiver and then an unsigned
// GET from the same socket; once the GET is served, the first datagram was
// either served before it or dropped.
func TestMACEnforced(t *testing.T) {
	tests := []struct {
		name       string
		sender     func(*transport.Config)
		receiver   func(*transport.Config)
		op         wire.Op
		value      []byte
		wantServed bool
	}{
		{"signed PUT", withAuth(t, clusterKey, nil), withAuth(t, clusterKey, nil), wire.OpPut, []byte("v"), true},
		{"fragmented signed PUT", withAuth(t, clusterKey, nil), withAuth(t, clusterKey, nil), wire.OpPut, make([]byte, 5000), true},
		{"PUT signed with the previous key", withAuth(t, otherKey, nil), withAuth(t, clusterKey, otherKey), wire.OpPut, []byte("v"), true},
		{"PUT signed with the next key", withAuth(t, otherKey, clusterKey), withAuth(t, clusterKey, otherKey), wire.OpPut, []byte("v"), true},
		{"unsigned PUT", noOpt, withAuth(t, clusterKey, nil), wire.OpPut, []byte("v"), false},
		{"fragmented unsigned PUT", noOpt, withAuth(t, clusterKey, nil), wire.OpPut, make([]byte, 5000), false},
		{"PUT signed with a wrong key", withAuth(t, otherKey, nil), withAuth(t, clusterKey, nil), wire.OpPut, []byte("v"), false},
		{"unsigned DEL", noOpt, withAuth(t, clusterKey, nil), wire.OpDel, nil, false},
		{"unsigned INVALIDATE", noOpt, withAuth(t, clusterKey, nil), wire.OpInvalidate, nil, false},
		{"INVALIDATE signed with a wrong key", withAuth(t, otherKey, nil), withAuth(t, clusterKey, nil), wire.OpInvalidate, nil, false},
		{"unsigned UPDATE", noOpt, withAuth(t, clusterKey, nil), wire.OpUpdate, []byte("v"), false},
		{"unsigned FETCH", noOpt, withAuth(t, clusterKey, nil), wire.OpFetch, nil, false},
		{"unsigned GET", noOpt, withAuth(t, clusterKey, nil), wire.OpGet, nil, true},
		{"unsigned PING", noOpt, withAuth(t, clusterKey, nil), wire.OpPing, nil, true},
		{"signed PUT to an unkeyed receiver", withAuth(t, clusterKey, nil), noOpt, wire.OpPut, []byte("v"), true},
		{"unsigned PUT to an unkeyed receiver", noOpt, noOpt, wire.OpPut, []byte("v"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			served := make(chan wire.Message, 4)
			server := listen(t, func(_ transport.Sender, _ netip.AddrPort, req *wire.Message) {
				served <- wire.Message{Header: req.Header, Value: bytes.Clone(req.Value)}
			}, tt.receiver)
			sender := listen(t, nil, tt.sender)
			m := wire.Message{Header: wire.Header{Op: tt.op, Seq: 1}, Key: []byte("k"), Value: tt.value}
			if err := sender.Send(server.Addr(), &m); err != nil {
				t.Fatal(err)
			}
			marker := wire.Message{Header: wire.Header{Op: wire.OpGet, Seq: 2}, Key: []byte("marker")}
			if err := sender.Send(server.Addr(), &marker); err != nil {
				t.Fatal(err)
			}
			var got []wire.Message
			for len(got) == 0 || got[len(got)-1].Seq != 2 {
				select {
				case r := <-served:
					got = append(got, r)
				case <-time.After(10 * time.Second):
					t.Fatal("the marker GET was not served")
				}
			}
			if gotServed := len(got) == 2; gotServed != tt.wantServed {
				t.Fatalf("%v served = %v, want %v", tt.op, gotServed, tt.wantServed)
			}
			if tt.wantServed && (got[0].Op != tt.op || !bytes.Equal(got[0].Value, tt.value)) {
				t.Fatalf("served %v with %d value bytes, want %v with %d", got[0].Op, len(got[0].Value), tt.op, len(tt.value))
			}
			// A signed message takes at most one datagram more than an
			// unsigned one (wire.TagLen bytes less per fragment).
			rejected, n := server.Stats().MACRejected[tt.op], uint64(wire.Datagrams(&m, wire.DefaultDatagram))
			switch {
			case tt.wantServed && rejected != 0:
				t.Fatalf("MACRejected[%v] = %d, want 0", tt.op, rejected)
			case !tt.wantServed && (rejected < n || rejected > n+1):
				t.Fatalf("MACRejected[%v] = %d, want every datagram of the message (%d or %d)", tt.op, rejected, n, n+1)
			}
		})
	}
}

// BenchmarkCallPut is one PUT call and its reply between two endpoints on
// loopback, unsigned and signed: what the MAC adds to a write's datagrams
// (two signatures and two verifications per call).
func BenchmarkCallPut(b *testing.B) {
	value := bytes.Repeat([]byte("v"), 100)
	for _, tt := range []struct {
		name string
		opt  func(*transport.Config)
	}{
		{"mac=off", noOpt},
		{"mac=on", withAuth(b, clusterKey, nil)},
		{"mac=on/replay=stamp", withReplay(b, transport.ReplayStamp)},
		{"mac=on/replay=require", withReplay(b, transport.ReplayRequire)},
	} {
		b.Run(tt.name, func(b *testing.B) {
			server := listen(b, echo, tt.opt)
			client := listen(b, nil, tt.opt)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				req := wire.Message{Header: wire.Header{Op: wire.OpPut}, Key: []byte("key:42"), Value: value}
				if _, err := client.Call(ctx, server.Addr(), &req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestUnsignedPeers: a keyed endpoint sends an Unsigned peer (a switch)
// its coherence messages without a tag and takes its unsigned replies,
// while an unsigned INVALIDATE from any other peer is still dropped.
func TestUnsignedPeers(t *testing.T) {
	flags := make(chan wire.Flag, 1)
	sw := listen(t, func(out transport.Sender, src netip.AddrPort, req *wire.Message) {
		flags <- req.Flags
		ack := wire.Message{Header: wire.Header{Op: req.Op.Reply(), Seq: req.Seq}, Key: req.Key}
		_ = out.Send(src, &ack)
	}, noOpt)
	served := make(chan wire.Op, 4)
	shim := listen(t, func(_ transport.Sender, _ netip.AddrPort, req *wire.Message) { served <- req.Op },
		withAuth(t, clusterKey, nil), func(c *transport.Config) {
			c.Unsigned = func(p netip.AddrPort) bool { return p == sw.Addr() }
		})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := shim.Call(ctx, sw.Addr(), &wire.Message{Header: wire.Header{Op: wire.OpInvalidate}, Key: []byte("k")})
	if err != nil || r.Op != wire.OpInvalidateAck {
		t.Fatalf("INVALIDATE to the switch: %v, %v", r.Header, err)
	}
	if f := <-flags; f&wire.FlagAuth != 0 {
		t.Error("the INVALIDATE to an unsigned peer carried a tag")
	}
	other := listen(t, nil, noOpt)
	for seq, op := range []wire.Op{wire.OpInvalidate, wire.OpGet} {
		m := wire.Message{Header: wire.Header{Op: op, Seq: uint64(seq + 1)}, Key: []byte("k")}
		if err := other.Send(shim.Addr(), &m); err != nil {
			t.Fatal(err)
		}
	}
	if op := <-served; op != wire.OpGet {
		t.Errorf("served %v from a peer that is not unsigned before the marker GET", op)
	}
	if n := shim.Stats().MACRejected[wire.OpInvalidate]; n != 1 {
		t.Errorf("MACRejected[INVALIDATE] = %d, want 1", n)
	}
}
