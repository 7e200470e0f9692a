package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/distcache/distcache/internal/testing/poll"
)

// do sends one command to addr in raw RESP and returns the reply: the line of
// a simple string or error, the body of a bulk string, "(nil)" for a null.
func do(t *testing.T, addr string, args ...string) string {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second}
	conn, err := d.DialContext(t.Context(), "tcp", addr)
	if err != nil {
		t.Fatalf("cannot connect to %s: %v", addr, err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatalf("cannot set deadline: %v", err)
	}
	req := fmt.Sprintf("*%d\r\n", len(args))
	for _, a := range args {
		req += fmt.Sprintf("$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatalf("cannot send %q: %v", args, err)
	}
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("cannot read reply to %q: %v", args, err)
	}
	line = strings.TrimSuffix(line, "\r\n")
	if !strings.HasPrefix(line, "$") {
		return line
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil {
		t.Fatalf("bad bulk header %q: %v", line, err)
	}
	if n < 0 {
		return "(nil)"
	}
	body := make([]byte, n+2)
	if _, err := io.ReadFull(r, body); err != nil {
		t.Fatalf("cannot read reply to %q: %v", args, err)
	}
	return string(body[:n])
}

func TestStartAnswersPing(t *testing.T) {
	t.Parallel()
	s := Start(t)
	if !strings.HasPrefix(s.Addr(), "127.0.0.1:") {
		t.Errorf("Addr() = %q, want 127.0.0.1:port", s.Addr())
	}
	if got := do(t, s.Addr(), "PING"); got != "+PONG" {
		t.Errorf("PING = %q, want +PONG", got)
	}
}

func TestStopRefusesConnections(t *testing.T) {
	t.Parallel()
	s := Start(t)
	s.Stop()
	s.Stop() // idempotent, and t.Cleanup stops once more
	d := net.Dialer{Timeout: 5 * time.Second}
	_, err := d.DialContext(t.Context(), "tcp", s.Addr())
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial after Stop: err = %v, want connection refused", err)
	}
}

func TestRestartKeepsAddrLosesData(t *testing.T) {
	t.Parallel()
	s := Start(t)
	addr := s.Addr()
	if got := do(t, addr, "SET", "k", "v"); got != "+OK" {
		t.Fatalf("SET = %q, want +OK", got)
	}
	s.Stop()
	s.Restart()
	if s.Addr() != addr {
		t.Errorf("Addr() after Restart = %q, want %q", s.Addr(), addr)
	}
	if got := do(t, addr, "PING"); got != "+PONG" {
		t.Errorf("PING after Restart = %q, want +PONG", got)
	}
	if got := do(t, addr, "GET", "k"); got != "(nil)" {
		t.Errorf("GET k after Restart without persistence = %q, want (nil)", got)
	}
	s.Restart() // from a running server: kills it first
	if got := do(t, addr, "PING"); got != "+PONG" {
		t.Errorf("PING after second Restart = %q, want +PONG", got)
	}
}

func TestAppendOnlySurvivesKill(t *testing.T) {
	t.Parallel()
	s := Start(t, WithAppendOnly())
	if got := do(t, s.Addr(), "SET", "k", "acknowledged"); got != "+OK" {
		t.Fatalf("SET = %q, want +OK", got)
	}
	s.Stop()
	s.Restart()
	if got := do(t, s.Addr(), "GET", "k"); got != "acknowledged" {
		t.Errorf("GET k after kill -9 and Restart = %q, want %q", got, "acknowledged")
	}
}

func TestWithArgs(t *testing.T) {
	t.Parallel()
	s := Start(t, WithArgs("--databases", "3"))
	if got := do(t, s.Addr(), "SELECT", "3"); !strings.HasPrefix(got, "-") {
		t.Errorf("SELECT 3 with 3 databases = %q, want an error", got)
	}
	if got := do(t, s.Addr(), "SELECT", "2"); got != "+OK" {
		t.Errorf("SELECT 2 with 3 databases = %q, want +OK", got)
	}
}

func TestAppendOnlyWritten(t *testing.T) {
	t.Parallel()
	s := Start(t, WithArgs("--appendonly", "yes", "--appendfsync", "everysec"))
	if got := do(t, s.Addr(), "SET", "k", "v"); got != "+OK" {
		t.Fatalf("SET = %q, want +OK", got)
	}
	poll.Eventually(t, "the SET written to the append-only file", func() (bool, error) { return AppendOnlyWritten(s.Addr()) })

	off := Start(t)
	if _, err := AppendOnlyWritten(off.Addr()); !errors.Is(err, errNoAppendOnly) {
		t.Errorf("AppendOnlyWritten without an append-only file: err = %v, want %v", err, errNoAppendOnly)
	}
}
