package faults

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// newNamespace creates a namespace for one test and deletes it when the
// test ends; the test is skipped where namespaces cannot be created.
func newNamespace(t *testing.T) *Namespace {
	t.Helper()
	if err := Supported(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	name := fmt.Sprintf("dcfi-%d-%d", os.Getpid(), time.Now().UnixNano()%1e9)
	ns, err := CreateNamespace(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ns.Delete(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return ns
}

// datagram is what a peer received: the sender's port, the sequence
// number and send time the sender wrote, and when it arrived.
type datagram struct {
	from     uint16
	seq      uint32
	sent     time.Time
	received time.Time
}

// peer is a UDP socket on the namespace's loopback that records every
// datagram it receives.
type peer struct {
	conn *net.UDPConn
	port uint16

	mu  sync.Mutex // guards got
	got []datagram
}

// newPeer opens a peer in ns; it is closed when the test ends.
func newPeer(t *testing.T, ns *Namespace) *peer {
	t.Helper()
	var conn *net.UDPConn
	err := ns.Do(func() error {
		var err error
		conn, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Room for every datagram a test sends, whatever the reader's pace.
	raw, err := conn.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20)
	}); err != nil || serr != nil {
		t.Fatalf("cannot enlarge the receive buffer: %v %v", err, serr)
	}
	p := &peer{conn: conn, port: uint16(conn.LocalAddr().(*net.UDPAddr).Port)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 64)
		for {
			n, from, err := conn.ReadFromUDP(buf)
			if err != nil {
				return
			}
			if n < 12 {
				continue
			}
			d := datagram{
				from: uint16(from.Port), seq: binary.BigEndian.Uint32(buf),
				sent:     time.Unix(0, int64(binary.BigEndian.Uint64(buf[4:]))),
				received: time.Now(),
			}
			p.mu.Lock()
			p.got = append(p.got, d)
			p.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = conn.Close()
		<-done
	})
	return p
}

// send sends n datagrams with sequence numbers first, first+1, … to dst.
func (p *peer) send(t *testing.T, dst *peer, first uint32, n int) {
	t.Helper()
	to := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: int(dst.port)}
	buf := make([]byte, 12)
	for i := range n {
		binary.BigEndian.PutUint32(buf, first+uint32(i))
		binary.BigEndian.PutUint64(buf[4:], uint64(time.Now().UnixNano()))
		if _, err := p.conn.WriteToUDP(buf, to); err != nil && !errors.Is(err, unix.EPERM) {
			// EPERM is what a sender sees for a packet a rule dropped on
			// the output hook.
			t.Fatalf("cannot send to %d: %v", dst.port, err)
		}
	}
}

// from returns the datagrams received from src so far, in arrival order.
func (p *peer) from(src *peer) []datagram {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []datagram
	for _, d := range p.got {
		if d.from == src.port {
			out = append(out, d)
		}
	}
	return out
}

// received returns every datagram received so far, in arrival order.
func (p *peer) received() []datagram {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]datagram(nil), p.got...)
}

// reset forgets what was received.
func (p *peer) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = nil
}
