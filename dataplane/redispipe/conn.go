//go:build linux

package redispipe

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"
)

// ErrDown is the error of a command queued while the connection is down.
var ErrDown = errors.New("redis connection down")

// redialPause is how long a broken connection stays down.
const redialPause = 100 * time.Millisecond

type pending struct {
	w   Waiter
	tag int
	// login: the reply is the AUTH of the connection's login; an error
	// fails the connection.
	login bool
}

// Conn is one Redis connection of an event loop.
type Conn struct {
	addr string         // host:port as given
	ip   netip.AddrPort // addr, when its host is an IP address
	fd   int            // -1 while down or dialling
	// dialing is the dial under way on a goroutine of its own (a name to
	// resolve, a TLS handshake), nil when none.
	dialing *dialAttempt
	out     []byte    // RESP commands to send
	sealed  []byte    // with TLS: out as TLS records, to write
	session *tls.Conn // with TLS: the session over fd
	in      []byte
	waiting []pending // commands sent or queued, oldest first
	head    int       // first of waiting not yet answered
	// answered counts the replies handed out; Expire compares it from
	// one call to the next, so that the commands' path reads no clock.
	answered uint64
	// seenAnswered is answered at the Expire call that found it last
	// changed, stalledSince that call's time (zero: nothing waiting).
	seenAnswered uint64
	stalledSince time.Time
	downAt       time.Time
	// onDial registers a new socket with the loop (and unregisters the
	// last one, old, -1 at first).
	onDial func(old, fd int) error
	// post runs a function on the loop's thread, from any goroutine: how
	// a dial on a goroutine of its own hands its socket back (nil: only
	// IP addresses without TLS can be dialled).
	post func(func())
	// prelude are commands sent first on every new connection (SCRIPT
	// LOAD), their replies dropped.
	prelude [][][]byte
	// login returns the AUTH command sent before the prelude on every new
	// connection (nil: none), read at each dial (WithLogin).
	login func() ([][]byte, error)
	// tlsConfig returns the TLS configuration of a new connection (nil:
	// plain TCP), called at each dial (WithTLS).
	tlsConfig func() (*tls.Config, error)
}

// Option configures a Conn.
type Option func(*Conn)

// WithPrelude sends cmds first on every new connection (after the
// login), dropping their replies.
func WithPrelude(cmds ...[][]byte) Option {
	return func(c *Conn) { c.prelude = append(c.prelude, cmds...) }
}

// WithLogin makes every new connection log in first with the command
// auth returns then (AUTH [user] password, the password as its file holds
// it at the dial). A dial whose auth fails stays down; an error reply to
// the AUTH fails the connection and the commands behind it.
func WithLogin(auth func() ([][]byte, error)) Option {
	return func(c *Conn) { c.login = auth }
}

// WithTLS makes every new connection speak TLS, with the configuration
// config returns at the dial (a CA bundle read then). The handshake runs
// on a goroutine of the dial (dial.go); after it the session's records are
// sealed and opened on the loop's thread.
func WithTLS(config func() (*tls.Config, error)) Option {
	return func(c *Conn) { c.tlsConfig = config }
}

// New returns a connection to addr (host:port), dialled on its first
// command; onDial registers each new socket with the owner's epoll; post
// runs a function on the owner's loop thread from any goroutine (nil when
// addr is an IP address and the connection has no TLS). An IP address
// without TLS is dialled on the loop's thread (a non-blocking connect);
// a host name, resolved at each dial, or TLS are dialled on a goroutine
// of their own, commands queueing meanwhile.
func New(addr string, onDial func(old, fd int) error, post func(func()), opts ...Option) *Conn {
	c := &Conn{addr: addr, fd: -1, onDial: onDial, post: post}
	c.ip, _ = netip.ParseAddrPort(addr)
	for _, o := range opts {
		o(c)
	}
	return c
}

// FD is the connection's socket, -1 while down or dialling.
func (c *Conn) FD() int { return c.fd }

// Do queues a command (its arguments); w receives its reply with tag. It
// reports false, queueing nothing, while the connection is down.
func (c *Conn) Do(w Waiter, tag int, args ...[]byte) bool {
	if c.fd < 0 && c.dialing == nil && !c.dial() {
		return false
	}
	c.out = AppendCommand(c.out, args...)
	c.waiting = append(c.waiting, pending{w: w, tag: tag})
	return true
}

// dial opens a new socket, or starts a dial on a goroutine, unless the
// connection broke less than redialPause ago; the login and the prelude
// are queued first.
func (c *Conn) dial() bool {
	if time.Since(c.downAt) < redialPause {
		return false
	}
	var auth [][]byte
	if c.login != nil {
		var err error
		if auth, err = c.login(); err != nil {
			c.downAt = time.Now()
			return false
		}
	}
	if c.ip.IsValid() && c.tlsConfig == nil {
		fd, err := connect(c.ip)
		if err == nil {
			err = c.onDial(-1, fd)
			if err != nil {
				_ = unix.Close(fd)
			}
		}
		if err != nil {
			c.downAt = time.Now()
			return false
		}
		c.fd = fd
	} else {
		if c.post == nil {
			c.downAt = time.Now()
			return false
		}
		c.dialing = c.startDial()
	}
	if auth != nil {
		c.out = AppendCommand(c.out, auth...)
		c.waiting = append(c.waiting, pending{login: true})
	}
	for _, cmd := range c.prelude {
		c.out = AppendCommand(c.out, cmd...)
		c.waiting = append(c.waiting, pending{})
	}
	return true
}

func connect(addr netip.AddrPort) (int, error) {
	family, sa := unix.AF_INET, unix.Sockaddr(nil)
	if addr.Addr().Is4() {
		sa = &unix.SockaddrInet4{Port: int(addr.Port()), Addr: addr.Addr().As4()}
	} else {
		family, sa = unix.AF_INET6, &unix.SockaddrInet6{Port: int(addr.Port()), Addr: addr.Addr().As16()}
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("cannot dial redis %s: %w", addr, err)
	}
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	if err := unix.Connect(fd, sa); err != nil && err != unix.EINPROGRESS {
		_ = unix.Close(fd)
		return -1, fmt.Errorf("cannot dial redis %s: %w", addr, err)
	}
	return fd, nil
}

// Flush writes the queued commands, as much as the socket takes; the rest
// goes when the loop reports the socket writable and calls Poll. With TLS
// they are sealed into records first, all of them together.
func (c *Conn) Flush() {
	if c.fd < 0 {
		return
	}
	buf := &c.out
	if c.session != nil {
		if len(c.out) > 0 {
			// The session writes its records to c.sealed (sessionConn).
			if _, err := c.session.Write(c.out); err != nil {
				c.fail(fmt.Errorf("cannot seal commands for redis %s: %w", c.addr, err))
				return
			}
			c.out = c.out[:0]
		}
		buf = &c.sealed
	}
	for len(*buf) > 0 {
		n, err := unix.Write(c.fd, *buf)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN || err == unix.ENOTCONN: // not connected yet, or full
			return
		case err != nil:
			c.fail(fmt.Errorf("cannot write to redis %s: %w", c.addr, err))
			return
		}
		*buf = (*buf)[:copy(*buf, (*buf)[n:])]
	}
}

// Poll reads the replies that arrived, hands each to its waiter, and
// writes what Flush left; the loop calls it when the socket is ready.
func (c *Conn) Poll() {
	c.Flush()
	var buf [16384]byte
	for c.fd >= 0 {
		n, err := c.read(buf[:])
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN || errors.Is(err, errWouldBlock):
			if len(c.sealed) > 0 { // the session answered a message of the server's
				c.Flush()
			}
			return
		case err != nil:
			c.fail(fmt.Errorf("cannot read from redis %s: %w", c.addr, err))
			return
		case n == 0:
			c.fail(fmt.Errorf("redis %s closed the connection", c.addr))
			return
		}
		c.in = append(c.in, buf[:n]...)
		if err := c.deliver(); err != nil {
			c.fail(err)
			return
		}
	}
}

// read reads from the socket, or opens the session's records from it.
func (c *Conn) read(b []byte) (int, error) {
	if c.session == nil {
		return unix.Read(c.fd, b)
	}
	n, err := c.session.Read(b)
	if n > 0 {
		return n, nil // an error, if any, comes again at the next read
	}
	if err == io.EOF {
		return 0, nil
	}
	return 0, err
}

// deliver parses the complete replies in c.in and hands them out.
func (c *Conn) deliver() error {
	at := 0
	for at < len(c.in) {
		r, n, err := parse(c.in[at:])
		if err != nil {
			return fmt.Errorf("cannot parse redis %s's reply: %w", c.addr, err)
		}
		if n == 0 {
			break
		}
		at += n
		if c.head == len(c.waiting) {
			return fmt.Errorf("redis %s replied to no command", c.addr)
		}
		p := c.waiting[c.head]
		c.waiting[c.head] = pending{}
		c.head++
		c.answered++
		if p.login && r.Kind == '-' {
			return fmt.Errorf("cannot log in to redis %s: %s", c.addr, r.Value)
		}
		if p.w != nil {
			p.w.RedisReply(p.tag, r)
		}
	}
	c.in = c.in[:copy(c.in, c.in[at:])]
	if c.head == len(c.waiting) {
		c.waiting, c.head = c.waiting[:0], 0
	}
	return nil
}

// Expire fails the connection, and every command waiting on it, when
// commands have waited with no reply since a call of Expire longer than
// after ago (a Redis paused, a peer gone without a reset); it reports
// whether it did. The loop calls it now and then, so a stall is seen
// between after and after plus one period (a dial under way has its own
// bound).
func (c *Conn) Expire(now time.Time, after time.Duration) bool {
	switch {
	case c.fd < 0 || c.head == len(c.waiting):
		c.stalledSince = time.Time{}
		return false
	case c.stalledSince.IsZero() || c.answered != c.seenAnswered:
		c.seenAnswered, c.stalledSince = c.answered, now
		return false
	case now.Sub(c.stalledSince) <= after:
		return false
	}
	c.fail(fmt.Errorf("redis %s answered nothing for %s", c.addr, now.Sub(c.stalledSince).Round(time.Millisecond)))
	return true
}

// fail closes the socket (or abandons the dial under way) and fails
// every command in flight.
func (c *Conn) fail(err error) {
	if c.dialing != nil {
		c.dialing.abandon()
		c.dialing = nil
	}
	if c.fd >= 0 {
		_ = c.onDial(c.fd, -1)
		_ = unix.Close(c.fd)
	}
	c.fd, c.session, c.downAt = -1, nil, time.Now()
	c.out, c.sealed, c.in = c.out[:0], c.sealed[:0], c.in[:0]
	waiting := c.waiting[c.head:]
	c.waiting, c.head = nil, 0
	for _, p := range waiting {
		if p.w != nil {
			p.w.RedisReply(p.tag, Reply{Err: err})
		}
	}
}

// Close closes the connection; commands in flight fail.
func (c *Conn) Close() { c.fail(ErrDown) }
