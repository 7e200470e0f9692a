package transport_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/internal/testing/wiretest"
)

// bigValue is a 1 MiB value of a recognisable pattern.
var bigValue = func() []byte {
	v := make([]byte, wire.MaxValueLen)
	for i := range v {
		v[i] = byte(i % 251)
	}
	return v
}()

// rawPeer is a plain UDP socket that plays a client or a server of the
// wire protocol by hand, reading only when the test says so: a receiver
// that is never scheduled while datagrams arrive.
type rawPeer struct {
	*wiretest.Peer
	t *testing.T
}

func newRawPeer(t *testing.T) *rawPeer { return &rawPeer{Peer: wiretest.NewPeer(t), t: t} }

// send sends m to dst, one datagram per fragment.
func (r *rawPeer) send(dst netip.AddrPort, m *wire.Message) {
	r.t.Helper()
	for off := 0; ; {
		b, next, err := wire.AppendDatagram(nil, m, off, wire.DefaultDatagram)
		if err != nil {
			r.t.Fatal(err)
		}
		r.WriteTo(dst, b)
		if next >= len(m.Value) {
			return
		}
		off = next
	}
}

// read returns the next datagram, parsed (its own bytes); the deadline
// only keeps a broken endpoint from hanging the test.
func (r *rawPeer) read() wire.Packet {
	r.t.Helper()
	p, err := wire.Parse(r.ReadDatagram(10 * time.Second))
	if err != nil {
		r.t.Fatal(err)
	}
	return p
}

// pong answers PING; with big set, it answers GET with bigValue.
func pong(big bool) transport.Handler {
	return func(out transport.Sender, src netip.AddrPort, req *wire.Message) {
		r := wire.Message{Header: wire.Header{Op: req.Op.Reply(), Seq: req.Seq}, Key: req.Key}
		switch {
		case req.Op == wire.OpPing:
		case req.Op == wire.OpGet && big:
			r.Value = bigValue
		default:
			return
		}
		_ = out.Send(src, &r)
	}
}

// receiveWindows plays the receiver of a message of op carrying bigValue
// from sender: it reads each window whole, checks with a PING that sender
// sent nothing past it — its PONG comes next, as datagrams from one socket
// arrive in order — and asks for the next window. The message's seq is
// that of the first datagram read. It returns the seq and the MOREs it
// sent.
func receiveWindows(t *testing.T, r *rawPeer, sender netip.AddrPort, op wire.Op) (seq uint64, mores int) {
	t.Helper()
	value := make([]byte, len(bigValue))
	seen := map[uint32]bool{}
	prefix, start := uint32(0), uint32(0)
	for ping := uint64(1); ; ping++ {
		for prefix < uint32(len(value)) && prefix < start+wire.Window {
			p := r.read()
			if len(seen) == 0 {
				seq = p.Seq
			}
			if p.Op != op || p.Seq != seq || p.FragOffset < start || p.FragOffset >= start+wire.Window || seen[p.FragOffset] {
				t.Fatalf("got %v seq %d bytes [%d, +%d), want a new fragment of %v seq %d in the window [%d, %d)",
					p.Op, p.Seq, p.FragOffset, len(p.Fragment), op, seq, start, start+wire.Window)
			}
			seen[p.FragOffset] = true
			copy(value[p.FragOffset:], p.Fragment)
			for seen[prefix] { // fragments are cut at multiples of one size
				prefix += uint32(len(p.Fragment))
			}
		}
		if prefix >= uint32(len(value)) {
			break
		}
		r.send(sender, &wire.Message{Header: wire.Header{Op: wire.OpPing, Seq: ping}, Key: []byte("probe")})
		if p := r.read(); p.Op != wire.OpPong || p.Seq != ping {
			t.Fatalf("after the window [%d, %d): %v seq %d bytes [%d, +%d), want PONG %d: the sender sent past the window",
				start, start+wire.Window, p.Op, p.Seq, p.FragOffset, len(p.Fragment), ping)
		}
		more := wire.NewMore(seq, []byte("big"), uint32(len(value)), prefix)
		r.send(sender, &more)
		mores++
		start = prefix
	}
	if !bytes.Equal(value, bigValue) {
		t.Fatal("the value received differs from the value sent")
	}
	return seq, mores
}

// TestReplyPacedByWindows checks that a server sends a reply of 1 MiB a
// window at a time, each when its client asks for it, from the reply
// queue of either reader.
func TestReplyPacedByWindows(t *testing.T) {
	for _, batch := range []int{1, transport.DefaultBatch} {
		t.Run(map[bool]string{true: "one datagram per system call", false: "batched"}[batch == 1], func(t *testing.T) {
			server := listen(t, pong(true), withBatch(batch))
			client := newRawPeer(t)
			client.send(server.Addr(), &wire.Message{Header: wire.Header{Op: wire.OpGet, Seq: 77}, Key: []byte("big")})
			seq, mores := receiveWindows(t, client, server.Addr(), wire.OpGetReply)
			if seq != 77 {
				t.Fatalf("reply seq %d, want 77", seq)
			}
			s := server.Stats()
			if mores < len(bigValue)/wire.Window-1 || s.MoreIn != uint64(mores) || s.MoreStale != 0 {
				t.Errorf("%d MOREs sent; server Stats() MoreIn %d, MoreStale %d", mores, s.MoreIn, s.MoreStale)
			}
		})
	}
}

// TestRequestPacedByWindows checks that a requester sends a request of
// 1 MiB a window at a time, each when its server asks for it.
func TestRequestPacedByWindows(t *testing.T) {
	client := listen(t, pong(false), withRetransmit(time.Minute)) // no resend while the test reads
	server := newRawPeer(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := client.Call(ctx, server.Addr(), &wire.Message{Header: wire.Header{Op: wire.OpPut}, Key: []byte("big"), Value: bigValue})
		done <- err
	}()
	seq, mores := receiveWindows(t, server, client.Addr(), wire.OpPut)
	server.send(client.Addr(), &wire.Message{Header: wire.Header{Op: wire.OpPutReply, Seq: seq}, Key: []byte("big")})
	if err := <-done; err != nil {
		t.Fatalf("Call() error = %v", err)
	}
	if s := client.Stats(); s.MoreIn != uint64(mores) || s.MoreStale != 0 {
		t.Errorf("%d MOREs sent; client Stats() MoreIn %d, MoreStale %d", mores, s.MoreIn, s.MoreStale)
	}
}

// lossyRelay forwards datagrams between one client (at front) and a server
// (from back), dropping the first copy of those drop picks.
type lossyRelay struct {
	front, back *net.UDPConn
	server      netip.AddrPort
	drop        func(p *wire.Packet, toServer bool) bool

	mu      sync.Mutex // guards client, seen and dropped
	client  netip.AddrPort
	seen    map[string]bool
	dropped []string
}

func newLossyRelay(t *testing.T, server netip.AddrPort, drop func(p *wire.Packet, toServer bool) bool) *lossyRelay {
	t.Helper()
	l := &lossyRelay{server: server, drop: drop, seen: map[string]bool{}}
	for _, c := range []**net.UDPConn{&l.front, &l.back} {
		conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadBuffer(4 << 20)
		*c = conn
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); l.forward(l.front, l.back, true) }()
	go func() { defer wg.Done(); l.forward(l.back, l.front, false) }()
	t.Cleanup(func() { _ = l.front.Close(); _ = l.back.Close(); wg.Wait() })
	return l
}

func (l *lossyRelay) addr() netip.AddrPort { return l.front.LocalAddr().(*net.UDPAddr).AddrPort() }

// forward relays what in receives until it is closed.
func (l *lossyRelay) forward(in, out *net.UDPConn, toServer bool) {
	buf := make([]byte, wire.MaxDatagram+1)
	for {
		n, src, err := in.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		p, err := wire.Parse(buf[:n])
		if err == nil && l.dropFirst(&p, toServer) {
			continue
		}
		l.mu.Lock()
		if toServer {
			l.client = src
		}
		dst := l.client
		l.mu.Unlock()
		if !toServer {
			_, _ = out.WriteToUDPAddrPort(buf[:n], dst)
		} else {
			_, _ = out.WriteToUDPAddrPort(buf[:n], l.server)
		}
	}
}

// dropFirst says whether to drop p: the first copy of a datagram drop picks.
func (l *lossyRelay) dropFirst(p *wire.Packet, toServer bool) bool {
	if !l.drop(p, toServer) {
		return false
	}
	k := fmt.Sprintf("%v seq %d from %d to server %v", p.Op, p.Seq, p.FragOffset, toServer)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen[k] {
		return false
	}
	l.seen[k] = true
	l.dropped = append(l.dropped, k)
	return true
}

// TestWindowsRepairLoss sends a 1 MiB request and its 1 MiB echo through a
// relay that loses a fragment inside a window, a window's last fragment,
// the message's last fragment and a MORE, each way: both still arrive
// whole, through the asks that repair a lost window. With stamps required
// too, each datagram sent again carries a new stamp and is accepted.
func TestWindowsRepairLoss(t *testing.T) {
	for _, tt := range []struct {
		name    string
		opt     func(*transport.Config)
		trailer int
	}{
		{"unsigned", noOpt, 0},
		{"stamps required", withReplay(t, transport.ReplayRequire), wire.Trailer(true, true)},
	} {
		t.Run(tt.name, func(t *testing.T) { testWindowsRepairLoss(t, tt.opt, tt.trailer) })
	}
}

func testWindowsRepairLoss(t *testing.T, opt func(*transport.Config), trailer int) {
	server := listen(t, echo, opt)
	cut := wire.FragmentCapacity(wire.DefaultDatagram, len("big")) - trailer
	lastOfWindow := (wire.Window/cut + 1) * cut
	lost := map[uint32]bool{3 * uint32(cut): true, uint32(lastOfWindow - cut): true, uint32(len(bigValue) - len(bigValue)%cut): true}
	relay := newLossyRelay(t, server.Addr(), func(p *wire.Packet, _ bool) bool {
		return p.Op == wire.OpMore && p.FragOffset < 2*wire.Window || p.Has(wire.FlagFragmented) && lost[p.FragOffset]
	})
	client := listen(t, nil, withRetransmit(5*time.Millisecond), opt)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	r, err := client.Call(ctx, relay.addr(), &wire.Message{Header: wire.Header{Op: wire.OpPut}, Key: []byte("big"), Value: bigValue})
	if err != nil {
		t.Fatalf("Call() error = %v\nclient %+v\nserver %+v", err, client.Stats(), server.Stats())
	}
	if r.Op != wire.OpPutReply || !bytes.Equal(r.Value, bigValue) {
		t.Fatalf("reply %v of %d bytes, want the echo of the 1 MiB value", r.Op, len(r.Value))
	}
	relay.mu.Lock()
	dropped := relay.dropped
	relay.mu.Unlock()
	for _, want := range []string{"PUT seq", "PUT_REPLY seq", "MORE seq.*to server true", "MORE seq.*to server false"} {
		if !slices.ContainsFunc(dropped, regexp.MustCompile(want).MatchString) {
			t.Errorf("the relay dropped %q, none matching %q: want fragments and MOREs lost each way", dropped, want)
		}
	}
	cs, ss := client.Stats(), server.Stats()
	if cs.MoreIn == 0 || cs.MoreOut == 0 || ss.MoreIn == 0 || ss.MoreOut == 0 {
		t.Errorf("MOREs client in %d out %d, server in %d out %d: want both to ask and be asked", cs.MoreIn, cs.MoreOut, ss.MoreIn, ss.MoreOut)
	}
	for i := range cs.MACRejected {
		if n := cs.MACRejected[i] + ss.MACRejected[i] + cs.Unstamped[i] + ss.Unstamped[i] + cs.ReplayRejected[i] + ss.ReplayRejected[i]; n != 0 {
			t.Errorf("%d datagrams of op %v refused for their MAC or stamp", n, wire.Op(i))
		}
	}
}

// sendWindow sends the fragments of m that start in the window at off and
// returns where the next window starts.
func (r *rawPeer) sendWindow(dst netip.AddrPort, m *wire.Message, off int) int {
	r.t.Helper()
	end := off + wire.Window
	for off < end && off < len(m.Value) {
		b, next, err := wire.AppendDatagram(nil, m, off, wire.DefaultDatagram)
		if err != nil {
			r.t.Fatal(err)
		}
		r.WriteTo(dst, b)
		off = next
	}
	return off
}

// TestWindowsMoveTheAttemptDeadline answers a call with a reply of three
// windows, each sent 60 % of the call's attempt after the client asked for
// it (a slow sender, injected): the reply takes longer than the attempt
// and still arrives, because each window moves the attempt's deadline on
// by the attempt's length, for CallUntil and CallMany alike.
func TestWindowsMoveTheAttemptDeadline(t *testing.T) {
	const attempt = 2 * time.Second
	type outcome struct {
		reply wire.Message
		err   error
	}
	tests := []struct {
		name string
		call func(e *transport.Endpoint, deadline time.Time, dst netip.AddrPort, m *wire.Message) outcome
	}{
		{"CallUntil", func(e *transport.Endpoint, deadline time.Time, dst netip.AddrPort, m *wire.Message) outcome {
			r, err := e.CallUntil(context.Background(), deadline, dst, m)
			return outcome{r, err}
		}},
		{"CallMany", func(e *transport.Endpoint, deadline time.Time, dst netip.AddrPort, m *wire.Message) outcome {
			out := make([]transport.Reply, 1)
			e.CallMany(context.Background(), deadline, []transport.Request{{Dst: dst, Msg: m}}, out)
			return outcome{out[0].Msg, out[0].Err}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			client := listen(t, nil, withRetransmit(time.Minute)) // no resend while the test paces the reply
			server := newRawPeer(t)
			value := bigValue[:2*wire.Window+1000]
			start := time.Now()
			done := make(chan outcome, 1)
			go func() {
				done <- tt.call(client, start.Add(attempt), server.Addr(), &wire.Message{Header: wire.Header{Op: wire.OpGet}, Key: []byte("big")})
			}()
			req := server.read()
			m := wire.Message{Header: wire.Header{Op: wire.OpGetReply, Seq: req.Seq}, Key: []byte("big"), Value: value}
			windows := 0
			for off := 0; off < len(value); {
				off = server.sendWindow(client.Addr(), &m, off)
				if windows++; off >= len(value) {
					break
				}
				more := server.read()
				if more.Op != wire.OpMore || more.Seq != req.Seq || int(more.FragOffset) != off {
					t.Fatalf("got %v seq %d offset %d, want MORE %d from %d", more.Op, more.Seq, more.FragOffset, req.Seq, off)
				}
				time.Sleep(attempt * 6 / 10) // the slow sender
			}
			o := <-done
			if o.err != nil {
				t.Fatalf("call after %v: %v, want the reply: its windows came within an attempt of each other", time.Since(start), o.err)
			}
			if !bytes.Equal(o.reply.Value, value) {
				t.Fatalf("reply of %d bytes differs from the %d sent", len(o.reply.Value), len(value))
			}
			if took := time.Since(start); windows != 3 || took < attempt {
				t.Fatalf("%d windows in %v: the reply did not outlast the attempt (%v), so this tested nothing", windows, took, attempt)
			}
		})
	}
}
