package transport_test

import (
	"bytes"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/antireplay"

	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
)

// markerSeq is the sequence number of the unsigned GET that replayer.send
// sends last: once it is served, every datagram before it was too, or was
// dropped (one reader, one socket, loopback keeps order).
const markerSeq = 1 << 60

// replayer is an attacker's socket on loopback: it captures what a sender
// sends it and sends those bytes to a receiver, as often as it likes.
type replayer struct {
	t    *testing.T
	conn *net.UDPConn
}

func newReplayer(t *testing.T) *replayer {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return &replayer{t: t, conn: conn}
}

func (r *replayer) addr() netip.AddrPort { return r.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

// capture has sender send m to the replayer and returns the datagram.
func (r *replayer) capture(sender *transport.Endpoint, m *wire.Message) []byte {
	r.t.Helper()
	if err := sender.Send(r.addr(), m); err != nil {
		r.t.Fatal(err)
	}
	buf := make([]byte, wire.MaxDatagram)
	if err := r.conn.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		r.t.Fatal(err)
	}
	n, _, err := r.conn.ReadFromUDPAddrPort(buf)
	if err != nil {
		r.t.Fatal(err)
	}
	return buf[:n]
}

// send sends the datagrams to dst, then the marker GET, and returns the
// sequence numbers of what served received before the marker.
func (r *replayer) send(dst netip.AddrPort, served <-chan uint64, datagrams ...[]byte) []uint64 {
	r.t.Helper()
	marker, err := wire.Encode(&wire.Message{Header: wire.Header{Op: wire.OpGet, Seq: markerSeq}, Key: []byte("marker")}, wire.DefaultDatagram)
	if err != nil {
		r.t.Fatal(err)
	}
	for _, b := range append(slices.Clone(datagrams), marker) {
		if _, err := r.conn.WriteToUDPAddrPort(b, dst); err != nil {
			r.t.Fatal(err)
		}
	}
	got := []uint64{}
	for {
		select {
		case s := <-served:
			if s == markerSeq {
				return got
			}
			got = append(got, s)
		case <-time.After(10 * time.Second):
			r.t.Fatalf("the marker was not served; served %v", got)
		}
	}
}

// servedSeqsOf listens with opts and reports the sequence numbers of the
// requests it serves.
func servedSeqsOf(t *testing.T, opts ...func(*transport.Config)) (*transport.Endpoint, <-chan uint64) {
	seqs := make(chan uint64, 1024)
	ep := listen(t, func(_ transport.Sender, _ netip.AddrPort, req *wire.Message) { seqs <- req.Seq }, opts...)
	return ep, seqs
}

func request(op wire.Op, seq uint64) *wire.Message {
	return &wire.Message{Header: wire.Header{Op: op, Seq: seq, ValueVersion: 5}, Key: []byte("k"), Value: []byte("v")}
}

// TestReplayedDatagramRejected: a captured signed request sent again is
// served once; the copy is dropped and counted by op.
func TestReplayedDatagramRejected(t *testing.T) {
	for _, op := range []wire.Op{wire.OpPut, wire.OpDel, wire.OpRMW, wire.OpInvalidate, wire.OpUpdate, wire.OpFetch, wire.OpFlush, wire.OpRenew} {
		t.Run(op.String(), func(t *testing.T) {
			server, served := servedSeqsOf(t, withReplay(t, transport.ReplayRequire))
			sender := listen(t, nil, withReplay(t, transport.ReplayRequire))
			r := newReplayer(t)
			b := r.capture(sender, request(op, 7))
			if got := r.send(server.Addr(), served, b, b, b); !slices.Equal(got, []uint64{7}) {
				t.Fatalf("served %v, want [7]: once", got)
			}
			st := server.Stats()
			if st.ReplayRejected[op] != 2 || st.Replay.Duplicates != 2 {
				t.Fatalf("ReplayRejected[%v] = %d, Replay.Duplicates = %d; want 2 and 2", op, st.ReplayRejected[op], st.Replay.Duplicates)
			}
		})
	}
}

// TestReplayModes: each mode accepts what the mode before it sends, and
// only require refuses a signed datagram without a stamp.
func TestReplayModes(t *testing.T) {
	modes := []transport.ReplayMode{transport.ReplayAccept, transport.ReplayStamp, transport.ReplayRequire}
	for _, from := range modes {
		for _, to := range modes {
			t.Run(from.String()+" to "+to.String(), func(t *testing.T) {
				server, served := servedSeqsOf(t, withReplay(t, to))
				sender := listen(t, nil, withReplay(t, from))
				r := newReplayer(t)
				b := r.capture(sender, request(wire.OpPut, 3))
				if stamped := b[2] == wire.StampedVersion; stamped != (from != transport.ReplayAccept) {
					t.Fatalf("mode %v sent version %d", from, b[2])
				}
				got := r.send(server.Addr(), served, b, b)
				want := []uint64{3}
				if from == transport.ReplayAccept && to != transport.ReplayRequire {
					want = []uint64{3, 3} // no stamp: nothing to refuse a replay by
				}
				if from == transport.ReplayAccept && to == transport.ReplayRequire {
					want = []uint64{}
				}
				if !slices.Equal(got, want) {
					t.Fatalf("served %v, want %v", got, want)
				}
				if n := server.Stats().Unstamped[wire.OpPut]; (n == 2) != (len(want) == 0) {
					t.Fatalf("Unstamped[PUT] = %d", n)
				}
			})
		}
	}
}

// TestReplayWindow delivers captured datagrams of one sender in another
// order: reordered within the window they are all served, once; one
// WindowLen or more behind the newest served is refused.
func TestReplayWindow(t *testing.T) {
	const n = antireplay.WindowLen + 12
	tests := []struct {
		name  string
		order []int // indexes of the captured datagrams, in sending order
		want  []int // indexes served
	}{
		{"in order", []int{0, 1, 2, 3}, []int{0, 1, 2, 3}},
		{"reordered within the window", []int{3, 0, 2, 1, 3, 0}, []int{3, 0, 2, 1}},
		{"the window's last slot", []int{antireplay.WindowLen, 1, 0}, []int{antireplay.WindowLen, 1}},
		{"outside the window", []int{n - 1, 0, 11, 12, n - 2}, []int{n - 1, 12, n - 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			server, served := servedSeqsOf(t, withReplay(t, transport.ReplayRequire))
			sender := listen(t, nil, withReplay(t, transport.ReplayRequire))
			r := newReplayer(t)
			captured := make([][]byte, n)
			for i := range captured {
				captured[i] = bytes.Clone(r.capture(sender, request(wire.OpUpdate, uint64(i))))
			}
			var send [][]byte
			for _, i := range tt.order {
				send = append(send, captured[i])
			}
			want := []uint64{}
			for _, i := range tt.want {
				want = append(want, uint64(i))
			}
			if got := r.send(server.Addr(), served, send...); !slices.Equal(got, want) {
				t.Fatalf("served %v, want %v", got, want)
			}
		})
	}
}

// TestSenderRestart: a sender that restarts on the same port under the
// same name is served at once, and a datagram of its previous run, never
// delivered before, is refused after the new run's.
func TestSenderRestart(t *testing.T) {
	server, served := servedSeqsOf(t, withReplay(t, transport.ReplayRequire))
	named := func(c *transport.Config) { c.Sender = "node/spine-0" }
	first := listen(t, nil, withReplay(t, transport.ReplayRequire), named)
	addr := first.Addr()
	r := newReplayer(t)
	old1 := bytes.Clone(r.capture(first, request(wire.OpInvalidate, 1)))
	old2 := bytes.Clone(r.capture(first, request(wire.OpInvalidate, 2)))
	if got := r.send(server.Addr(), served, old1); !slices.Equal(got, []uint64{1}) {
		t.Fatalf("first run: served %v, want [1]", got)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second := listen(t, nil, withReplay(t, transport.ReplayRequire), named, func(c *transport.Config) { c.Addr = addr.String() })
	fresh := r.capture(second, request(wire.OpInvalidate, 3))
	if got := r.send(server.Addr(), served, fresh, old2, old1); !slices.Equal(got, []uint64{3}) {
		t.Fatalf("after the restart: served %v, want [3]", got)
	}
	st := server.Stats()
	if st.Replay.NewEpochs != 1 || st.Replay.OldEpochs != 2 {
		t.Fatalf("Replay stats %+v: want 1 new epoch and 2 datagrams of the old one refused", st.Replay)
	}
}

// TestRetransmissionsAreStampedAgain: with stamps required, a request
// whose first two copies the server drops is served on its third, under
// its one request sequence number: each copy carries a new stamp.
func TestRetransmissionsAreStampedAgain(t *testing.T) {
	var (
		mu   sync.Mutex
		seqs []uint64
	)
	server := listen(t, func(out transport.Sender, src netip.AddrPort, req *wire.Message) {
		mu.Lock()
		seqs = append(seqs, req.Seq)
		n := len(seqs)
		mu.Unlock()
		if n >= 3 {
			echo(out, src, req)
		}
	}, withReplay(t, transport.ReplayRequire))
	client := listen(t, nil, withReplay(t, transport.ReplayRequire), withRetransmit(time.Millisecond))
	req := request(wire.OpPut, 0)
	req.Seq = client.NextSeq()
	if _, err := client.Call(t.Context(), server.Addr(), req); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seqs) < 3 || slices.ContainsFunc(seqs, func(s uint64) bool { return s != req.Seq }) {
		t.Fatalf("served request seqs %v, want at least 3 copies of %d", seqs, req.Seq)
	}
	if n := server.Stats().ReplayRejected[wire.OpPut]; n != 0 {
		t.Fatalf("ReplayRejected[PUT] = %d, want 0", n)
	}
}
