//go:build linux

package redispipe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// dialTimeout bounds a dial on its goroutine: resolving the name,
// connecting and the TLS handshake.
const dialTimeout = 5 * time.Second

// A dial on a goroutine of its own: a host name is resolved, the socket
// connected and the TLS handshake completed there, with the socket in
// blocking use (sessionConn waits with poll(2)). The goroutine then hands
// the socket and the session to the loop through post, and from then on
// the loop alone uses them, without blocking: sessionConn reads the
// socket until it would block, and gives the records the session writes
// to the connection's output (crypto/tls keeps a partial record across a
// read that would block, as it does across a read deadline).

// dialAttempt is one dial on its goroutine.
type dialAttempt struct {
	// state is attemptRunning until the goroutine hands its result over
	// (attemptDone) or the loop gives up on it (attemptAbandoned, after
	// which the goroutine closes its own socket).
	state atomic.Int32
}

const (
	attemptRunning int32 = iota
	attemptDone
	attemptAbandoned
)

// abandon gives the attempt up; a socket it still makes is closed.
func (a *dialAttempt) abandon() { a.state.CompareAndSwap(attemptRunning, attemptAbandoned) }

// startDial starts a dial of c's address on a goroutine; its result
// reaches dialed on the loop's thread.
func (c *Conn) startDial() *dialAttempt {
	a := &dialAttempt{}
	addr, ip, tlsConfig, post := c.addr, c.ip, c.tlsConfig, c.post
	go func() {
		fd, session, err := dialSession(addr, ip, tlsConfig)
		if !a.state.CompareAndSwap(attemptRunning, attemptDone) {
			if fd >= 0 {
				_ = unix.Close(fd)
			}
			return
		}
		post(func() { c.dialed(a, fd, session, err) })
	}()
	return a
}

// dialed takes a dial's result on the loop's thread: the socket joins the
// loop and the queued commands go out, or they fail.
func (c *Conn) dialed(a *dialAttempt, fd int, session *tls.Conn, err error) {
	if c.dialing != a { // given up meanwhile (fail, Close)
		if fd >= 0 {
			_ = unix.Close(fd)
		}
		return
	}
	c.dialing = nil
	if err == nil {
		if err = c.onDial(-1, fd); err != nil {
			_ = unix.Close(fd)
		}
	}
	if err != nil {
		c.fail(err)
		return
	}
	c.fd = fd
	if session != nil {
		session.NetConn().(*sessionConn).toLoop(c)
		c.session = session
	}
	c.Poll() // the queued commands, and what the server sent already
}

// dialSession resolves addr (unless ip is set), connects to the first of
// its addresses that answers and, with a TLS configuration, completes the
// handshake, all within dialTimeout. The socket it returns is
// non-blocking.
func dialSession(addr string, ip netip.AddrPort, tlsConfig func() (*tls.Config, error)) (int, *tls.Conn, error) {
	deadline := time.Now().Add(dialTimeout)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	ips := []netip.AddrPort{ip}
	if !ip.IsValid() {
		var err error
		if ips, err = resolve(ctx, addr); err != nil {
			return -1, nil, err
		}
	}
	var cfg *tls.Config
	if tlsConfig != nil {
		var err error
		if cfg, err = tlsConfig(); err != nil {
			return -1, nil, err
		}
	}
	var sc *sessionConn
	var err error
	for _, ip := range ips {
		if sc, err = connectWithin(ip, deadline); err == nil {
			break
		}
	}
	if err != nil {
		return -1, nil, fmt.Errorf("cannot dial redis %s: %w", addr, err)
	}
	if cfg == nil {
		return sc.fd, nil, nil
	}
	session := tls.Client(sc, cfg)
	if err := session.Handshake(); err != nil {
		_ = unix.Close(sc.fd)
		return -1, nil, fmt.Errorf("cannot complete TLS handshake with redis %s: %w", addr, err)
	}
	return sc.fd, session, nil
}

// connectWithin connects a non-blocking socket to ip, waiting for it
// until deadline.
func connectWithin(ip netip.AddrPort, deadline time.Time) (*sessionConn, error) {
	fd, err := connect(ip)
	if err != nil {
		return nil, err
	}
	sc := &sessionConn{fd: fd, deadline: deadline, remote: net.TCPAddrFromAddrPort(ip)}
	if err := sc.await(unix.POLLOUT); err == nil {
		var soErr int
		if soErr, err = unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR); err == nil && soErr != 0 {
			err = unix.Errno(soErr)
		}
	}
	if err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	return sc, nil
}

// resolve looks addr's host up.
func resolve(ctx context.Context, addr string) ([]netip.AddrPort, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("cannot dial redis %q: %w", addr, err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("cannot dial redis %q: port: %w", addr, err)
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("cannot resolve redis %s: %w", addr, err)
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("cannot resolve redis %s: no address", addr)
	}
	out := make([]netip.AddrPort, len(ips))
	for i, ip := range ips {
		out[i] = netip.AddrPortFrom(ip.Unmap(), uint16(p))
	}
	return out, nil
}

// errWouldBlock is sessionConn's error when the socket has nothing to
// read: a temporary net.Error, which crypto/tls returns without failing
// the session.
var errWouldBlock error = wouldBlock{}

type wouldBlock struct{}

func (wouldBlock) Error() string   { return "redis socket would block" }
func (wouldBlock) Timeout() bool   { return true }
func (wouldBlock) Temporary() bool { return true }

// sessionConn is the net.Conn under a TLS session over a non-blocking
// socket. During the handshake (its dial's goroutine) it waits for the
// socket until the deadline; on the loop (after toLoop) it never waits:
// a read that would block returns errWouldBlock and a write appends to
// the connection's sealed output, which Flush writes.
type sessionConn struct {
	fd       int
	deadline time.Time // the handshake's
	owner    *Conn     // set on the loop: writes go to owner.sealed
	remote   net.Addr
}

// toLoop hands the session over to c's loop.
func (s *sessionConn) toLoop(c *Conn) { s.owner = c }

func (s *sessionConn) Read(b []byte) (int, error) {
	for {
		n, err := unix.Read(s.fd, b)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			if s.owner != nil {
				return 0, errWouldBlock
			}
			if err := s.await(unix.POLLIN); err != nil {
				return 0, err
			}
			continue
		case err != nil:
			return 0, err
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (s *sessionConn) Write(b []byte) (int, error) {
	if s.owner != nil {
		s.owner.sealed = append(s.owner.sealed, b...)
		return len(b), nil
	}
	for done := 0; done < len(b); {
		n, err := unix.Write(s.fd, b[done:])
		switch {
		case err == unix.EINTR:
		case err == unix.EAGAIN:
			if err := s.await(unix.POLLOUT); err != nil {
				return done, err
			}
		case err != nil:
			return done, err
		default:
			done += n
		}
	}
	return len(b), nil
}

// await waits until the socket is ready for events or the deadline.
func (s *sessionConn) await(events int16) error {
	for {
		left := time.Until(s.deadline)
		if left <= 0 {
			return errDialTimeout
		}
		fds := []unix.PollFd{{Fd: int32(s.fd), Events: events}}
		n, err := unix.Poll(fds, int(min(left, time.Second)/time.Millisecond)+1)
		switch {
		case err == unix.EINTR || n == 0:
			continue
		case err != nil:
			return err
		}
		return nil // ready, or an error the next call reports
	}
}

var errDialTimeout = errors.New("redis dial timed out")

// Close does nothing: the socket is the Conn's (or the dial's) to close.
func (s *sessionConn) Close() error                     { return nil }
func (s *sessionConn) LocalAddr() net.Addr              { return nil }
func (s *sessionConn) RemoteAddr() net.Addr             { return s.remote }
func (s *sessionConn) SetDeadline(time.Time) error      { return nil }
func (s *sessionConn) SetReadDeadline(time.Time) error  { return nil }
func (s *sessionConn) SetWriteDeadline(time.Time) error { return nil }
