package gateway_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/distcache/distcache/internal/testing/poll"
)

// rawConn is a TCP connection to the gateway that writes bytes as given.
type rawConn struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	var d net.Dialer
	c, err := d.DialContext(t.Context(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	// A bound for a gateway that hangs, not a synchronisation: every
	// exchange below completes or fails long before it.
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	return &rawConn{t: t, c: c, r: bufio.NewReader(c)}
}

func (r *rawConn) send(s string) {
	r.t.Helper()
	if _, err := io.WriteString(r.c, s); err != nil {
		r.t.Fatal(err)
	}
}

// line reads one reply line, without its CRLF.
func (r *rawConn) line() string {
	r.t.Helper()
	s, err := r.r.ReadString('\n')
	if err != nil {
		r.t.Fatalf("reading a reply: %v (read %q)", err, s)
	}
	return strings.TrimSuffix(s, "\r\n")
}

// closed reports whether the gateway closed the connection (EOF or reset).
func (r *rawConn) closed() bool {
	_, err := r.r.ReadByte()
	return err != nil && !isTimeout(err)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestProtocolReplies checks replies byte for byte where client libraries
// would hide the difference: RESP3's null and map after HELLO 3, inline
// commands (as telnet sends them), and QUIT's reply before the close.
func TestProtocolReplies(t *testing.T) {
	addr, _ := startGateway(t)
	r := dialRaw(t, addr)
	r.send("GET raw:missing\r\n")
	if got := r.line(); got != "$-1" {
		t.Errorf("RESP2 null = %q, want $-1", got)
	}
	r.send("*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n")
	if got := r.line(); got != "%7" {
		t.Errorf("HELLO 3 reply starts %q, want a map of 7", got)
	}
	for done := false; !done; { // the map's keys and values, modules' empty array last
		done = r.line() == "*0"
	}
	r.send("*2\r\n$3\r\nGET\r\n$11\r\nraw:missing\r\n")
	if got := r.line(); got != "_" {
		t.Errorf("RESP3 null = %q, want _", got)
	}
	r.send("SET raw:k \"two words\"\r\nGET raw:k\r\n")
	if ok, l, v := r.line(), r.line(), r.line(); ok != "+OK" || l != "$9" || v != "two words" {
		t.Errorf("inline SET and GET = %q %q %q", ok, l, v)
	}
	r.send("QUIT\r\n")
	if got := r.line(); got != "+OK" || !r.closed() {
		t.Errorf("QUIT = %q, then the connection must close", got)
	}
}

// TestHalfClosedClientGetsEveryReply: a client that sends its commands
// and closes its side (as `redis-cli < file` or `nc -N` do) still reads
// every reply before the gateway closes the connection.
func TestHalfClosedClientGetsEveryReply(t *testing.T) {
	addr, _ := startGateway(t)
	r := dialRaw(t, addr)
	r.send("SET raw:half v\r\nGET raw:half\r\nGET raw:half:missing\r\n")
	if err := r.c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(r.r)
	if err != nil {
		t.Fatal(err)
	}
	if want := "+OK\r\n$1\r\nv\r\n$-1\r\n"; string(rest) != want {
		t.Fatalf("replies = %q, want %q", rest, want)
	}
}

// TestIncrPipeline: a pipeline of INCRs and DECRs of distinct keys (an
// event loop's round of them) answers each as Redis does, a value that is
// not an integer included.
func TestIncrPipeline(t *testing.T) {
	addr, _ := startGateway(t)
	r := dialRaw(t, addr)
	r.send("SET raw:word two\r\n")
	if got := r.line(); got != "+OK" {
		t.Fatalf("SET = %q", got)
	}
	for round, want := range [][]string{
		{":1", ":-1", "-ERR value is not an integer or out of range"},
		{":2", ":-2", "-ERR value is not an integer or out of range"},
	} {
		r.send("INCR raw:up\r\nDECR raw:down\r\nINCR raw:word\r\n")
		for i, w := range want {
			if got := r.line(); got != w {
				t.Fatalf("round %d, reply %d = %q, want %q", round, i, got, w)
			}
		}
	}
}

// TestMalformedInput sends what a broken or hostile client sends: each
// gets a protocol error and a closed connection, and the gateway goes on
// serving others.
func TestMalformedInput(t *testing.T) {
	for _, mode := range []struct {
		name  string
		loops int
	}{{"event loops", 1}, {"goroutine per connection", -1}} {
		t.Run(mode.name, func(t *testing.T) {
			malformedInput(t, mode.loops)
		})
	}
}

func malformedInput(t *testing.T, loops int) {
	addr, srv := startGateway(t, withMaxCommandBytes(4096), withCommandTimeout(200*time.Millisecond), withLoops(loops))
	cases := 0
	for _, tc := range []struct {
		name, send, want string
	}{
		{"not a bulk string in an array", "*1\r\n:5\r\n", "-ERR Protocol error: expected '$', got ':'"},
		{"bulk length not a number", "*1\r\n$x\r\n", "-ERR Protocol error: invalid bulk length"},
		{"bulk longer than its length", "*1\r\n$2\r\nabc\r\n", "-ERR Protocol error: invalid bulk length"},
		{"giant bulk length, then more bytes", "*1\r\n$2000000000\r\n" + strings.Repeat("x", 8192),
			"-ERR Protocol error: invalid bulk length"},
		{"bulk length beyond the bound, then more bytes than it says", "*1\r\n$5000\r\n" + strings.Repeat("x", 8192),
			"-ERR Protocol error: invalid bulk length"},
		{"an endless inline command", strings.Repeat("y", 8192), "-ERR Protocol error: command larger than 4096 bytes"},
		{"a command that never ends (slow client)", "*2\r\n$3\r\nGET\r\n$10\r\nabc",
			"-ERR Protocol error: command not complete within 200ms"},
		{"a count line that never ends", "*2", "-ERR Protocol error: command not complete within 200ms"},
	} {
		cases++
		t.Run(tc.name, func(t *testing.T) {
			r := dialRaw(t, addr)
			r.send(tc.send)
			if got := r.line(); got != tc.want {
				t.Errorf("reply %q, want %q", got, tc.want)
			}
			if !r.closed() {
				t.Error("connection still open")
			}
		})
	}
	ok := dialRaw(t, addr)
	ok.send("PING\r\n")
	if got := ok.line(); got != "+PONG" {
		t.Errorf("a new connection after the bad ones: %q", got)
	}
	// A goroutine per connection counts a refusal once its connection
	// is closed, which the client may see first.
	poll.Eventually(t, "every refusal counted", func() (bool, error) {
		got := srv.Stats().ProtocolErrors
		return got == uint64(cases), fmt.Errorf("protocol errors counted: %d, want %d", got, cases)
	})
}

// TestMaxConnections: the connection beyond the limit is refused with
// Redis' error, and a connection that closes makes room.
func TestMaxConnections(t *testing.T) {
	addr, srv := startGateway(t, withMaxConnections(2))
	a, b := dialRaw(t, addr), dialRaw(t, addr)
	for _, r := range []*rawConn{a, b} {
		r.send("PING\r\n")
		if got := r.line(); got != "+PONG" {
			t.Fatalf("PING = %q", got)
		}
	}
	c := dialRaw(t, addr)
	if got := c.line(); got != "-ERR max number of clients reached" || !c.closed() {
		t.Errorf("third connection: %q, want refused and closed", got)
	}
	if st := srv.Stats(); st.Rejected != 1 {
		t.Errorf("stats %+v, want 1 rejected", st)
	}
}

// TestOversizedCommandsDiscarded: a command with a value larger than the
// gateway's limit, or larger in all than --max-command-bytes, is read
// and discarded, answered with an error, and the next commands on the
// connection run; so does a command of nothing (a negative count), which
// Redis skips. Nothing is written, and no protocol error is counted.
// Both ways of serving connections.
func TestOversizedCommandsDiscarded(t *testing.T) {
	big := strings.Repeat("v", 2_000_000)
	half := strings.Repeat("w", 800_000)
	for _, mode := range []struct {
		name  string
		loops int
	}{{"event loops", 1}, {"goroutine per connection", -1}} {
		t.Run(mode.name, func(t *testing.T) {
			addr, srv := startGateway(t, withLoops(mode.loops))
			for _, tc := range []struct {
				name, send string
				want       []string
			}{
				{"a SET of 2 MB, then PING", resp("SET", "big:k", big) + resp("PING"),
					[]string{"-ERR string exceeds maximum allowed size (DistCache values are at most 1048576 bytes)", "+PONG"}},
				{"a SET of 2 MB inline with other commands", resp("SET", "big:a", "1") + resp("SET", "big:k", big) + resp("GET", "big:a") + resp("GET", "big:k"),
					[]string{"+OK", "-ERR string exceeds maximum allowed size (DistCache values are at most 1048576 bytes)", "$1", "1", "$-1"}},
				{"an MSET of 1.6 MB", resp("MSET", "big:m1", half, "big:m2", half) + resp("EXISTS", "big:m1", "big:m2"),
					[]string{"-ERR command larger than 1114112 bytes", ":0"}},
				{"a negative count", "*-10\r\n" + resp("PING"), []string{"+PONG"}},
				{"a count of zero", "*0\r\nPING\r\n", []string{"+PONG"}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					r := dialRaw(t, addr)
					r.send(tc.send)
					for i, want := range tc.want {
						if got := r.line(); got != want {
							t.Fatalf("reply line %d: %q, want %q", i, got, want)
						}
					}
					r.send("PING\r\n")
					if got := r.line(); got != "+PONG" {
						t.Errorf("PING after: %q", got)
					}
				})
			}
			if got := srv.Stats().ProtocolErrors; got != 0 {
				t.Errorf("protocol errors counted: %d, want none", got)
			}
		})
	}
}

// resp is args as a RESP array of bulk strings.
func resp(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}
