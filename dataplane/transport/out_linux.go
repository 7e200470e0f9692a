//go:build linux

package transport

import (
	"encoding/binary"
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/distcache/distcache/dataplane/wire"
)

// bundleRoom is the room a slot keeps ahead of its first datagram, so that
// a second datagram to the same peer turns the slot into a bundle (the
// bundle header and the first record's length prefix) without moving the
// first.
const bundleRoom = wire.HeaderLen + wire.BundleRecordPrefix

// mmsgOut is a batch of datagrams for sendmmsg: out[:queued] are queued,
// each the bytes buf[i][start[i]:end[i]] addressed to dst[i] (by name[i]);
// sent is a flush's progress. A datagram queued for a peer that a slot
// already addresses joins that slot as a bundle record (package wire's
// bundle) while the bundle stays within size bytes, unless bundling is off.
type mmsgOut struct {
	out        []unix.Mmsghdr
	iov        []unix.Iovec
	buf        [][]byte // each of bundleRoom+size bytes
	start, end []int
	records    []int // datagrams in slot i: 1 alone, 2 or more a bundle
	dst        []netip.AddrPort
	name       [][sockaddrLen]byte
	size       int
	bundle     bool
	queued     int
	sent       int
}

// newMmsgOut allocates room for n datagrams of up to size bytes, once;
// bundle says whether datagrams to the same peer travel as bundles.
func newMmsgOut(n, size int, bundle bool) mmsgOut {
	o := mmsgOut{out: make([]unix.Mmsghdr, n), iov: make([]unix.Iovec, n),
		buf: make([][]byte, n), start: make([]int, n), end: make([]int, n), records: make([]int, n),
		dst: make([]netip.AddrPort, n), name: make([][sockaddrLen]byte, n), size: size, bundle: bundle}
	slot := bundleRoom + size
	slab := make([]byte, n*slot)
	for i := range n {
		o.buf[i] = slab[i*slot : (i+1)*slot : (i+1)*slot]
		o.out[i].Hdr.Name = &o.name[i][0]
		o.out[i].Hdr.Iov = &o.iov[i]
		o.out[i].Hdr.SetIovlen(1)
	}
	return o
}

// add queues a copy of datagram d (at most size bytes) to dst, which must
// be addressable: into the bundle of the slot already addressed to dst when
// it fits there, else into a new slot. It reports false, having queued
// nothing, when every slot is taken.
func (o *mmsgOut) add(d []byte, dst netip.AddrPort, family int) bool {
	if o.bundle && o.join(d, dst) {
		return true
	}
	b := o.free()
	if b == nil {
		return false
	}
	o.take(copy(b[:len(d)], d), dst, family)
	return true
}

// free returns the empty buffer (of size bytes' capacity) of the next
// slot, for a datagram encoded in place and then queued with commit; nil
// when every slot is taken.
func (o *mmsgOut) free() []byte {
	if o.queued == len(o.out) {
		return nil
	}
	return o.buf[o.queued][bundleRoom:bundleRoom]
}

// commit queues datagram d, encoded in free's buffer, to dst (which must
// be addressable): into the bundle of the slot already addressed to dst
// when it fits there, leaving the free slot free, else in its own slot.
func (o *mmsgOut) commit(d []byte, dst netip.AddrPort, family int) {
	if o.bundle && o.join(d, dst) {
		return
	}
	o.take(len(d), dst, family)
}

// take queues the next slot, holding a datagram of n bytes at bundleRoom,
// to dst.
func (o *mmsgOut) take(n int, dst netip.AddrPort, family int) {
	i := o.queued
	o.start[i], o.end[i] = bundleRoom, bundleRoom+n
	o.records[i], o.dst[i] = 1, dst
	o.out[i].Hdr.Namelen = encodeSockaddr(&o.name[i], dst, family)
	o.point(i)
	o.queued++
}

// join appends d to the latest slot addressed to dst when the bundle stays
// within size bytes.
func (o *mmsgOut) join(d []byte, dst netip.AddrPort) bool {
	for i := o.queued - 1; i >= 0; i-- {
		if o.dst[i] != dst {
			continue
		}
		// As a bundle the slot spans buf[i][:end[i]] (a lone datagram's
		// prefix and header fill the room ahead of it).
		if o.end[i]+wire.BundleRecordPrefix+len(d) > o.size {
			return false
		}
		b := o.buf[i]
		if o.records[i] == 1 {
			binary.BigEndian.PutUint16(b[wire.HeaderLen:], uint16(o.end[i]-bundleRoom))
			o.start[i] = 0
		}
		binary.BigEndian.PutUint16(b[o.end[i]:], uint16(len(d)))
		o.end[i] += wire.BundleRecordPrefix + copy(b[o.end[i]+wire.BundleRecordPrefix:], d)
		o.records[i]++
		wire.PutBundleHeader(b, o.end[i]-wire.HeaderLen)
		o.point(i)
		return true
	}
	return false
}

// point aims slot i's iovec at its bytes.
func (o *mmsgOut) point(i int) {
	o.iov[i].Base = &o.buf[i][o.start[i]]
	o.iov[i].SetLen(o.end[i] - o.start[i])
}

// flush sends every queued datagram with send (o.sendAll bound to e, as a
// closure made once) and empties the queue.
func (o *mmsgOut) flush(e *Endpoint, send func(fd uintptr) bool) {
	if o.queued == 0 {
		return
	}
	o.sent = 0
	if err := e.sys.raw.Write(send); err != nil { // closed: the rest is lost
		lost := 0
		for _, n := range o.records[o.sent:o.queued] {
			lost += n
		}
		e.stats.sendErrors.Add(uint64(lost))
	}
	o.queued = 0
}

// sendAll runs sendmmsg on e's socket fd until every queued datagram is
// sent or skipped, counting them in e's stats, and returns false (wait
// until writable) when the socket buffer is full.
func (o *mmsgOut) sendAll(e *Endpoint, fd uintptr) bool {
	for o.sent < o.queued {
		n, _, errno := unix.RawSyscall6(unix.SYS_SENDMMSG, fd,
			uintptr(unsafe.Pointer(&o.out[o.sent])), uintptr(o.queued-o.sent), 0, 0, 0)
		switch {
		case errno == unix.EINTR:
			continue
		case errno == unix.EAGAIN:
			return false
		case errno != 0 || n == 0:
			// sendmmsg fails only when its first datagram fails: skip it.
			e.stats.sendErrors.Add(uint64(o.records[o.sent]))
			e.cfg.Logger.Debug("cannot send datagram", "addr", e.addr,
				"to", o.dst[o.sent], "records", o.records[o.sent], "err", errno)
			o.sent++
		default:
			var bytes, bundles, bundled uint64
			for i := o.sent; i < o.sent+int(n); i++ {
				bytes += uint64(o.out[i].Len)
				if o.records[i] > 1 {
					bundles++
					bundled += uint64(o.records[i])
				}
			}
			e.stats.sends.Add(1)
			e.stats.datagramsOut.Add(uint64(n))
			e.stats.bytesOut.Add(bytes)
			if bundles > 0 {
				e.stats.bundlesOut.Add(bundles)
				e.stats.bundledOut.Add(bundled)
			}
			o.sent += int(n)
		}
	}
	return true
}
