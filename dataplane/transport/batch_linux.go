//go:build linux

package transport

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/distcache/distcache/dataplane/wire"
)

// sysConn is the socket's raw connection and address family, for
// recvmmsg(2) and sendmmsg(2).
type sysConn struct {
	raw    syscall.RawConn
	family int // unix.AF_INET or unix.AF_INET6: the sockaddr format the socket takes
}

func newSysConn(conn *net.UDPConn) (sysConn, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return sysConn{}, fmt.Errorf("cannot get the raw socket: %w", err)
	}
	var family int
	var serr error
	if err := raw.Control(func(fd uintptr) {
		family, serr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_DOMAIN)
	}); err != nil {
		return sysConn{}, fmt.Errorf("cannot read the socket's address family: %w", err)
	}
	if serr != nil {
		return sysConn{}, fmt.Errorf("cannot read the socket's address family: %w", serr)
	}
	return sysConn{raw: raw, family: family}, nil
}

// newReader batches unless Config.Batch is 1.
func (e *Endpoint) newReader() reader {
	if e.cfg.Batch == 1 {
		return newSingleReader(e)
	}
	return newMmsgReader(e)
}

// sockaddrLen is the room for a sockaddr_in6, which also holds a sockaddr_in.
const sockaddrLen = unix.SizeofSockaddrInet6

// mmsgReader receives with recvmmsg and sends the replies queued while its
// batch was handled with sendmmsg. Every buffer and header is allocated once;
// the headers point into them. It is confined to its reader goroutine.
//
// Both calls are raw system calls: the socket is non-blocking, so they
// return at once (EAGAIN hands the wait to the runtime's poller), and a
// batch's send takes long enough (tens of µs) that the scheduler would
// otherwise hand the reader's P to another thread on every flush. That
// hand-off cost a fifth of a one-core node's throughput (docs/benchmarks.md).
type mmsgReader struct {
	e *Endpoint

	// in[i] describes the receive buffer inBuf[i] and the source inName[i];
	// received is how many the last recvmmsg filled.
	in       []unix.Mmsghdr
	inIov    []unix.Iovec
	inBuf    [][]byte
	inName   [][sockaddrLen]byte
	received int
	recvErr  error

	// The datagrams queued since the last flush.
	mmsgOut

	// The system-call closures, bound once so that calls do not allocate.
	recvFn, sendFn func(fd uintptr) bool
}

func newMmsgReader(e *Endpoint) *mmsgReader {
	n, in, out := e.cfg.Batch, wire.MaxDatagram+1, e.cfg.Datagram
	r := &mmsgReader{
		e:  e,
		in: make([]unix.Mmsghdr, n), inIov: make([]unix.Iovec, n),
		inBuf: make([][]byte, n), inName: make([][sockaddrLen]byte, n),
		mmsgOut: newMmsgOut(n, out, e.cfg.Bundle),
	}
	inSlab := make([]byte, n*in)
	for i := range n {
		r.inBuf[i] = inSlab[i*in : (i+1)*in : (i+1)*in]
		r.inIov[i].Base = &r.inBuf[i][0]
		r.inIov[i].SetLen(in)
		r.in[i].Hdr.Name = &r.inName[i][0]
		r.in[i].Hdr.Namelen = sockaddrLen
		r.in[i].Hdr.Iov = &r.inIov[i]
		r.in[i].Hdr.SetIovlen(1)
	}
	r.recvFn, r.sendFn = r.doRecv, r.doSend
	return r
}

func (r *mmsgReader) recv() (int, error) {
	r.reset()
	if err := r.e.sys.raw.Read(r.recvFn); err != nil {
		return 0, err
	}
	return r.received, r.recvErr
}

// reset readies the headers of the last receive for the next.
func (r *mmsgReader) reset() {
	for i := range r.received {
		r.in[i].Hdr.Namelen = sockaddrLen // the kernel wrote the source's length
	}
	r.received = 0
}

// doRecv runs recvmmsg on the non-blocking socket: it returns what has
// arrived, up to the batch, and false (wait for input) when nothing has.
func (r *mmsgReader) doRecv(fd uintptr) bool {
	for {
		n, _, errno := unix.RawSyscall6(unix.SYS_RECVMMSG, fd,
			uintptr(unsafe.Pointer(&r.in[0])), uintptr(len(r.in)), 0, 0, 0)
		switch errno {
		case 0:
			r.received, r.recvErr = int(n), nil
			return true
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		default:
			r.received, r.recvErr = 0, errno
			return true
		}
	}
}

func (r *mmsgReader) datagram(i int) ([]byte, netip.AddrPort) {
	h := &r.in[i]
	return r.inBuf[i][:h.Len], decodeSockaddr(r.inName[i][:h.Hdr.Namelen])
}

// Send encodes m into the reply queue, flushing it whenever it fills.
func (r *mmsgReader) Send(dst netip.AddrPort, m *wire.Message) error {
	return r.sendRange(dst, m, 0, r.e.firstWindow(dst, m))
}

// sendRange encodes the fragments of m that start in [from, end) into the
// reply queue.
func (r *mmsgReader) sendRange(dst netip.AddrPort, m *wire.Message, from, end int) error {
	if !addressable(dst.Addr(), r.e.sys.family) {
		// A scoped IPv6 peer needs its zone resolved, and a peer of the
		// wrong family an error: the socket's own send does both.
		return r.e.sendRange(dst, m, from, end)
	}
	for off := from; ; {
		buf := r.free()
		if buf == nil {
			r.Flush()
			buf = r.free()
		}
		b, next, err := r.e.appendDatagram(buf, dst, m, off) // in place: at most Datagram bytes, the slot's room
		if err != nil {
			return err
		}
		r.commit(b, dst, r.e.sys.family)
		if next >= len(m.Value) || next >= end {
			return nil
		}
		off = next
	}
}

// Flush sends the replies queued since the last flush.
func (r *mmsgReader) Flush() { r.flush(r.e, r.sendFn) }

// doSend sends the queued datagrams (mmsgOut.sendAll).
func (r *mmsgReader) doSend(fd uintptr) bool { return r.sendAll(r.e, fd) }

// decodeSockaddr reads a sockaddr_in or sockaddr_in6 as written by the
// kernel, reporting IPv4-mapped addresses as IPv4. The IPv6 scope is not
// kept; an unknown family is the zero AddrPort.
func decodeSockaddr(b []byte) netip.AddrPort {
	if len(b) < 4 {
		return netip.AddrPort{}
	}
	port := binary.BigEndian.Uint16(b[2:4])
	switch binary.NativeEndian.Uint16(b[0:2]) {
	case unix.AF_INET:
		if len(b) >= unix.SizeofSockaddrInet4 {
			return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), port)
		}
	case unix.AF_INET6:
		if len(b) >= 24 {
			return netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[8:24])).Unmap(), port)
		}
	}
	return netip.AddrPort{}
}

// addressable says whether encodeSockaddr can address a from a socket of
// the family: scoped IPv6 addresses need their zone resolved by name.
func addressable(a netip.Addr, family int) bool {
	switch family {
	case unix.AF_INET:
		return a.Unmap().Is4()
	case unix.AF_INET6:
		return a.IsValid() && a.Zone() == ""
	}
	return false
}

// encodeSockaddr writes dst in the socket family's sockaddr format and
// returns its length; dst must be addressable.
func encodeSockaddr(sa *[sockaddrLen]byte, dst netip.AddrPort, family int) uint32 {
	a := dst.Addr()
	binary.BigEndian.PutUint16(sa[2:4], dst.Port())
	switch family {
	case unix.AF_INET:
		binary.NativeEndian.PutUint16(sa[0:2], unix.AF_INET)
		v4 := a.Unmap().As4()
		copy(sa[4:8], v4[:])
		clear(sa[8:unix.SizeofSockaddrInet4])
		return unix.SizeofSockaddrInet4
	case unix.AF_INET6:
		binary.NativeEndian.PutUint16(sa[0:2], unix.AF_INET6)
		clear(sa[4:8]) // flow information
		v6 := a.As16()
		copy(sa[8:24], v6[:])
		clear(sa[24:28]) // scope id
		return unix.SizeofSockaddrInet6
	}
	return 0
}
