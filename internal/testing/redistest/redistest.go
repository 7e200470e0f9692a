// Package redistest runs real redis-server processes for tests, on loopback.
// There is no fake: Start execs the redis-server binary found on PATH (install
// it with `make test-deps`) in a t.TempDir(), without persistence, and waits
// until it answers PING. Stop kills it with SIGKILL to simulate a crash, and
// Restart brings it back on the same address, so tests can exercise Redis
// failures end to end.
//
// The package uses the standard library only; it speaks just enough RESP to
// check that the server is up and, for tests of durability, whether it has
// written its append-only file (AppendOnlyWritten).
package redistest

import (
	"errors"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
)

// startAttempts bounds how many ports Start tries when the free port it
// picked was taken by someone else before redis-server could bind it.
const startAttempts = 5

// Server is a redis-server process started for a test.
type Server struct {
	t   testing.TB
	bin string
	dir string
	cfg config

	addr string // 127.0.0.1:port; kept across Restart

	mu sync.Mutex
	p  *proc // the running process, nil when stopped
}

// Option configures Start.
type Option func(*config)

type config struct {
	appendOnly bool
	args       []string
	user, pass string // AUTH of the readiness probe ("" pass: none)
	tls        *TLSFiles
}

// TLSFiles are the PEM files of a server that serves TLS only.
type TLSFiles struct {
	Cert, Key, CA string
}

// WithPassword makes the server require AUTH: with user "", the default
// user's password (requirepass); otherwise an ACL user with every
// permission, and the default user turned off, so only user can log in.
func WithPassword(user, password string) Option {
	return func(c *config) {
		c.user, c.pass = user, password
		if user == "" {
			c.args = append(c.args, "--requirepass", password)
			return
		}
		c.args = append(c.args, "--user", "default", "off", "--user", user, "on", ">"+password, "~*", "&*", "+@all")
	}
}

// WithLogin makes the readiness probe log in as user (default user when
// "") with password, for a server whose logins come from elsewhere (an
// ACL file given with WithArgs).
func WithLogin(user, password string) Option {
	return func(c *config) { c.user, c.pass = user, password }
}

// WithTLS makes the server serve TLS only, on the port Addr names, with
// the certificate and key of files; clients are not asked for one.
func WithTLS(files TLSFiles) Option {
	return func(c *config) { c.tls = &files }
}

// WithAppendOnly turns on the append-only file with appendfsync always, so
// that every write Redis acknowledged survives Stop (SIGKILL) and Restart.
func WithAppendOnly() Option {
	return func(c *config) { c.appendOnly = true }
}

// WithArgs passes extra arguments to redis-server, e.g. "--maxmemory", "1mb".
// They come after the package's own arguments, so they override them.
func WithArgs(args ...string) Option {
	return func(c *config) { c.args = append(c.args, args...) }
}

// Start starts redis-server on 127.0.0.1 on a free port, in a t.TempDir(),
// with no persistence (unless WithAppendOnly) and protected mode off, and
// waits until it answers PING. The process is killed by a t.Cleanup. Start
// fails the test if redis-server is not on PATH or does not come up; it must
// be called from the test's goroutine.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redistest: cannot find redis-server on PATH (%v); run `make test-deps` to install it", err)
	}
	s := &Server{t: t, bin: bin, dir: t.TempDir()}
	for _, o := range opts {
		o(&s.cfg)
	}
	t.Cleanup(s.Stop)
	for range startAttempts {
		port, perr := freePort()
		if perr != nil {
			t.Fatalf("redistest: %v", perr)
		}
		s.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if err = s.launch(); err == nil || !errors.Is(err, errAddrInUse) {
			break
		}
	}
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return s
}

// Addr returns the server's address, "127.0.0.1:port". It does not change
// across Restart.
func (s *Server) Addr() string { return s.addr }

// Stop kills redis-server with SIGKILL, as a crash would, and waits until it
// is gone. Stopping a stopped server does nothing; Stop may be called from any
// goroutine.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.p == nil {
		return
	}
	s.p.kill()
	s.p = nil
}

// Pause stops the running server with SIGSTOP, as a stalled or paused
// process: connections stay open and nothing is answered until Resume.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.p == nil {
		s.t.Fatal("redistest: the server is not running")
	}
	if err := s.p.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("redistest: cannot send %v: %v", sig, err)
	}
}

// Restart stops the server if it is running, starts it again on the same
// port and directory, and waits until it answers PING. Without
// WithAppendOnly the data is lost. Restart fails the test if the server does
// not come back; it must be called from the test's goroutine.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	if err := s.launch(); err != nil {
		s.t.Fatalf("redistest: %v", err)
	}
}

// args returns redis-server's command line.
func (s *Server) args() []string {
	_, port, _ := net.SplitHostPort(s.addr)
	ports := []string{"--port", port}
	if f := s.cfg.tls; f != nil {
		ports = []string{"--port", "0", "--tls-port", port, "--tls-cert-file", f.Cert, "--tls-key-file", f.Key,
			"--tls-ca-cert-file", f.CA, "--tls-auth-clients", "no"}
	}
	args := []string{
		"--bind", "127.0.0.1",
		"--dir", s.dir,
		"--protected-mode", "no",
		"--daemonize", "no",
		"--save", "",
	}
	args = append(args, ports...)
	if s.cfg.appendOnly {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		args = append(args, "--appendonly", "no")
	}
	return append(args, s.cfg.args...)
}

func (s *Server) logPath() string { return filepath.Join(s.dir, "redis.log") }
