//go:build linux

package redisconn

import (
	"context"
	"fmt"
	"io"
	"net"
	"syscall"
	"unsafe"
)

// Dial connects to a Redis server over TCP and returns a connection whose
// reads and writes are raw system calls on the socket, waiting in the
// runtime's poller only when the socket is not ready (as the data-plane
// transport's UDP sockets do). A Go read or write through net.Conn tells
// the scheduler it may block: when it takes longer than the scheduler's
// monitor tick (20 µs) — a loopback write that wakes Redis often does on a
// virtual machine — the monitor hands the goroutine's processor to another
// thread and keeps waking every 20 µs itself. On a shim at a CPU limit that
// was about half of its context switches. Deadlines still apply: the
// waits honour SetDeadline. It suits go-redis's Options.Dialer; not TLS.
func Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c, nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("cannot use the connection to %s: %w", addr, err)
	}
	return &rawConn{TCPConn: tc, rc: rc}, nil
}

// rawConn is a TCP connection read and written with raw system calls.
type rawConn struct {
	*net.TCPConn
	rc syscall.RawConn
}

func (c *rawConn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var (
		n     int
		errno syscall.Errno
	)
	err := c.rc.Read(func(fd uintptr) bool {
		n, errno = rawIO(syscall.SYS_READ, fd, b)
		return errno != syscall.EAGAIN // not ready: wait in the poller
	})
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: errno}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (c *rawConn) Write(b []byte) (int, error) {
	written := 0
	for written < len(b) {
		var (
			n     int
			errno syscall.Errno
		)
		err := c.rc.Write(func(fd uintptr) bool {
			n, errno = rawIO(syscall.SYS_WRITE, fd, b[written:])
			return errno != syscall.EAGAIN // the send buffer is full: wait in the poller
		})
		switch {
		case err != nil:
			return written, err
		case errno != 0:
			return written, &net.OpError{Op: "write", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: errno}
		}
		written += n
	}
	return written, nil
}

// rawIO runs the read or write system call trap on fd for p (not empty),
// again when a signal interrupts it.
func rawIO(trap, fd uintptr, p []byte) (int, syscall.Errno) {
	for {
		r, _, e := syscall.RawSyscall(trap, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		if e != syscall.EINTR {
			return int(r), e
		}
	}
}
