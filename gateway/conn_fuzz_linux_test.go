//go:build linux

package gateway

import (
	"errors"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/internal/testing/clustertest"
)

// FuzzConnection sends arbitrary bytes on a TCP connection to a gateway
// served by its event loops (as `distcache gateway` serves plaintext
// clients), then closes its side: the path FuzzPipeline skips, where
// redcon's reader, the bound on a command's bytes and the loops' rounds
// of GETs, SETs and INCRs run. The connection ends with every reply one
// whole RESP value; a refused command ends it with one protocol error,
// counted. The gateway serves the next connection.
func FuzzConnection(f *testing.F) {
	for _, seed := range []string{
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
		"GET a\r\nGET b\r\nGET c\r\nSET a 1\r\nSET b 2\r\nINCR n\r\nINCR m\r\nDECR n\r\n",
		"*1\r\n:5\r\n",
		"*-3\r\n",
		"*1\r\n$x\r\n",
		"*1\r\n$2000000000\r\n" + strings.Repeat("x", 5000),
		"*99999999999\r\n",
		strings.Repeat("y", 5000),
		"*2\r\n$3\r\nGET\r\n$10\r\nabc",
		"SET \xff\xfe \xc3\x28\r\nGET \xff\xfe\r\n\"unbalanced\r\n",
	} {
		f.Add([]byte(seed))
	}
	c := clustertest.Start(f, clustertest.Config{Name: "fuzzconn", Racks: 1, ShardsPerRack: 1, Spine: 1})
	cfg := Config{MaxCommandBytes: 4096, Loops: 1}
	if !EventLoops(cfg) {
		f.Skip("no event loops")
	}
	var tc client.Config
	tc.Transport.Polled = true
	cfg.Store = c.NewClient(tc)
	s, err := New(cfg)
	if err != nil {
		f.Fatal(err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(f.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	f.Cleanup(func() {
		if err := s.Close(); err != nil {
			f.Error(err)
		}
		if err := <-done; err != nil {
			f.Error(err)
		}
	})
	addr := ln.Addr().String()
	f.Fuzz(func(t *testing.T, data []byte) {
		before := s.Stats().ProtocolErrors
		replies, readErr := exchange(t, addr, data)
		var last []byte
		for rest := replies; len(rest) > 0; {
			next, err := oneValue(rest)
			if err != nil {
				if readErr != nil {
					break // reset by the gateway's close: the tail may be lost
				}
				t.Fatalf("input %q: reply %q is not RESP (%v); all: %q", data, rest, err, replies)
			}
			last, rest = rest[:len(rest)-len(next)], next
		}
		refused := strings.HasPrefix(string(last), "-ERR Protocol error")
		if refused && s.Stats().ProtocolErrors == before {
			t.Fatalf("input %q: refused with %q, not counted", data, last)
		}
		if r, _ := exchange(t, addr, []byte("PING\r\n")); string(r) != "+PONG\r\n" {
			t.Fatalf("after input %q the gateway answers PING with %q", data, r)
		}
	})
}

// exchange sends data on a new connection to addr, closes its side, and
// reads until the gateway closes the connection.
func exchange(t *testing.T, addr string, data []byte) ([]byte, error) {
	t.Helper()
	var d net.Dialer
	conn, err := d.DialContext(t.Context(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, werr := conn.Write(data) // the gateway may have refused the command already
	if werr == nil {
		if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
			werr = err
		}
	}
	out, err := io.ReadAll(conn)
	if err == nil && werr != nil && !errors.Is(werr, net.ErrClosed) {
		err = werr
	}
	return out, err
}
