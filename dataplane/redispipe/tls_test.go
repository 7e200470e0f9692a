//go:build linux

package redispipe

import (
	"crypto/tls"
	"net"
	"strings"
	"testing"

	"github.com/distcache/distcache/internal/testing/certtest"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/internal/testing/redistest"
)

// TestDialOnAGoroutine reaches Redis by a host name, and over TLS with a
// password: the dial (resolving, connecting, the handshake) runs on a
// goroutine of its own while the commands queue, then the pipeline's
// replies come back in order, values of several TLS records each way
// among them, and a connection Redis ends fails the command in flight;
// across a restart of Redis the connection is dialled again.
func TestDialOnAGoroutine(t *testing.T) {
	dir := t.TempDir()
	ca := certtest.NewCA(t, dir, "ca")
	cert, key := ca.Server(t, "redis", "localhost")
	secured := redistest.Start(t, redistest.WithTLS(redistest.TLSFiles{Cert: cert, Key: key, CA: ca.File}), redistest.WithPassword("", "s3cret"))
	plain := redistest.Start(t)
	login := WithLogin(func() ([][]byte, error) { return [][]byte{[]byte("AUTH"), []byte("s3cret")}, nil })
	trusted := WithTLS(func() (*tls.Config, error) {
		return &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", MinVersion: tls.VersionTLS12}, nil
	})
	for _, tc := range []struct {
		name string
		addr string
		opts []Option
	}{
		{"a host name", named(t, plain.Addr()), nil},
		{"TLS to an IP address", secured.Addr(), []Option{login, trusted}},
		{"TLS to a host name", named(t, secured.Addr()), []Option{login, trusted}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLoop(t, tc.addr, tc.opts...)
			checkPipeline(t, l)
		})
	}
	// Redis restarts under a TLS connection: the command in flight fails,
	// and once the pause has passed the connection is dialled again.
	l := newLoop(t, named(t, secured.Addr()), login, trusted)
	rec := &recorder{replies: map[int]Reply{}}
	l.conn.Do(rec, 1, []byte("SET"), []byte("k"), []byte("before"))
	l.until(func() bool { return len(rec.replies) == 1 })
	secured.Restart()
	l.conn.Do(rec, 2, []byte("GET"), []byte("k"))
	l.until(func() bool { return len(rec.replies) == 2 })
	if rec.replies[2].Err == nil {
		t.Fatalf("GET across a restart of Redis: %+v, want the connection's error", rec.replies[2])
	}
	poll.Until(t, "the connection dialled again", func() bool { return l.conn.Do(rec, 3, []byte("PING")) })
	l.until(func() bool { return len(rec.replies) == 3 })
	if got := rec.replies[3]; got.Err != nil || string(got.Value) != "PONG" {
		t.Fatalf("PING after the restart: %+v, want PONG", got)
	}
}

// TestDialFailsOnAGoroutine: a server whose certificate the CA does not
// vouch for, a name that does not resolve and a TLS configuration that
// cannot be made each fail the commands queued behind the dial, and
// leave the connection down.
func TestDialFailsOnAGoroutine(t *testing.T) {
	dir := t.TempDir()
	ca := certtest.NewCA(t, dir, "ca")
	other := certtest.NewCA(t, dir, "other")
	cert, key := ca.Server(t, "redis", "localhost")
	srv := redistest.Start(t, redistest.WithTLS(redistest.TLSFiles{Cert: cert, Key: key, CA: ca.File}))
	for _, tc := range []struct {
		name, addr, want string
		config           func() (*tls.Config, error)
	}{
		{"an untrusted certificate", srv.Addr(), "certificate", func() (*tls.Config, error) {
			return &tls.Config{RootCAs: other.Pool(), ServerName: "localhost", MinVersion: tls.VersionTLS12}, nil
		}},
		{"a name that does not resolve", "redis.invalid:6379", "cannot resolve", nil},
		{"no TLS configuration", srv.Addr(), "CA bundle", func() (*tls.Config, error) {
			return nil, &net.AddrError{Err: "cannot read Redis CA bundle", Addr: "ca.crt"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts []Option
			if tc.config != nil {
				opts = append(opts, WithTLS(tc.config))
			}
			l := newLoop(t, tc.addr, opts...)
			rec := &recorder{replies: map[int]Reply{}}
			if !l.conn.Do(rec, 1, []byte("PING")) {
				t.Fatal("a command was refused before the dial")
			}
			l.until(func() bool { return len(rec.replies) == 1 })
			if err := rec.replies[1].Err; err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("PING behind the dial: %+v, want an error containing %q", rec.replies[1], tc.want)
			}
			if l.conn.FD() >= 0 || l.conn.Do(rec, 2, []byte("PING")) {
				t.Fatal("the connection is not down after its dial failed")
			}
		})
	}
}

// named is addr with the host name localhost for its IP address.
func named(t *testing.T, addr string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("localhost", port)
}
