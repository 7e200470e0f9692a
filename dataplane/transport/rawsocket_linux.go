//go:build linux

package transport

import (
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawSocket is a polled endpoint's UDP socket (Config.Polled): opened with
// system calls and never registered in the Go runtime's poller, whose
// idle thread would otherwise wake for every datagram that arrives, to
// find no goroutine waiting for it. It is the endpoint's syscall.RawConn:
// a send that finds the socket full waits in poll(2).
type rawSocket struct {
	fd     int
	family int // unix.AF_INET or unix.AF_INET6
	closed atomic.Bool
}

// listenRaw opens and binds a non-blocking UDP socket on addr.
func listenRaw(addr string, buffer int) (*rawSocket, sysConn, netip.AddrPort, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, sysConn{}, netip.AddrPort{}, err
	}
	ap := ua.AddrPort()
	family := unix.AF_INET6
	if ap.Addr().Unmap().Is4() {
		family = unix.AF_INET
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, sysConn{}, netip.AddrPort{}, fmt.Errorf("cannot open a socket: %w", err)
	}
	s := &rawSocket{fd: fd, family: family}
	var sa unix.Sockaddr
	if family == unix.AF_INET {
		sa = &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().Unmap().As4()}
	} else {
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 0) // as Go's "udp" listeners
		sa = &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
	}
	// Best effort, as Listen's: the kernel caps the sizes.
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, buffer)
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, buffer)
	if err := unix.Bind(fd, sa); err != nil {
		_ = unix.Close(fd)
		return nil, sysConn{}, netip.AddrPort{}, fmt.Errorf("cannot bind: %w", err)
	}
	bound, err := unix.Getsockname(fd)
	if err != nil {
		_ = unix.Close(fd)
		return nil, sysConn{}, netip.AddrPort{}, fmt.Errorf("cannot read the bound address: %w", err)
	}
	var local netip.AddrPort
	switch b := bound.(type) {
	case *unix.SockaddrInet4:
		local = netip.AddrPortFrom(netip.AddrFrom4(b.Addr), uint16(b.Port))
	case *unix.SockaddrInet6:
		local = netip.AddrPortFrom(netip.AddrFrom16(b.Addr).Unmap(), uint16(b.Port))
	}
	return s, sysConn{raw: s, family: family}, local, nil
}

func (s *rawSocket) Control(f func(fd uintptr)) error {
	f(uintptr(s.fd))
	return nil
}

func (s *rawSocket) Read(f func(fd uintptr) bool) error  { return s.wait(f, unix.POLLIN) }
func (s *rawSocket) Write(f func(fd uintptr) bool) error { return s.wait(f, unix.POLLOUT) }

// wait calls f until it reports done, waiting in poll(2) for events
// between calls.
func (s *rawSocket) wait(f func(fd uintptr) bool, events int16) error {
	for !f(uintptr(s.fd)) {
		if s.closed.Load() {
			return net.ErrClosed
		}
		fds := []unix.PollFd{{Fd: int32(s.fd), Events: events}}
		if _, err := unix.Poll(fds, 100); err != nil && err != unix.EINTR {
			return err
		}
	}
	return nil
}

// writeTo sends datagram b to dst with a system call of its own.
func (s *rawSocket) writeTo(b []byte, dst netip.AddrPort) error {
	if len(b) == 0 || !addressable(dst.Addr(), s.family) {
		return fmt.Errorf("cannot send %d bytes to %s from this socket", len(b), dst)
	}
	var sa [sockaddrLen]byte
	n := encodeSockaddr(&sa, dst, s.family)
	var serr error
	err := s.wait(func(fd uintptr) bool {
		_, _, errno := unix.Syscall6(unix.SYS_SENDTO, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0,
			uintptr(unsafe.Pointer(&sa[0])), uintptr(n))
		switch errno {
		case unix.EAGAIN:
			return false
		case 0:
		default:
			serr = errno
		}
		return true
	}, unix.POLLOUT)
	if err != nil {
		return err
	}
	return serr
}

func (s *rawSocket) close() error {
	s.closed.Store(true)
	return unix.Close(s.fd)
}

// listenPolled opens a polled endpoint's socket (Config.Polled).
func listenPolled(cfg Config) (polledSocket, sysConn, netip.AddrPort, error) {
	if cfg.Batch == 1 {
		return nil, sysConn{}, netip.AddrPort{}, fmt.Errorf("a polled endpoint needs batches (Config.Batch > 1)")
	}
	return listenRaw(cfg.Addr, cfg.SocketBuffer)
}
