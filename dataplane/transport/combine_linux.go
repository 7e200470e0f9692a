//go:build linux

package transport

import (
	"net/netip"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// combiner sends the datagrams of Endpoint.Send with sendmmsg(2), many per
// system call when many goroutines send at once (flat combining): a Send
// queues its datagrams, and if no goroutine is sending at the moment it
// becomes the sender and flushes the queue, again and again until the queue
// is empty; a Send that finds a sender at work leaves its datagrams to it.
// Under load the datagrams of a gateway's pipelined GETs, a cache node's
// forwarded misses or a shim's replies leave together; a lone Send still
// leaves at once, with one system call as before. There is no timer and no
// goroutine of its own.
type combiner struct {
	e *Endpoint

	mu sync.Mutex // guards pending, spare and sending
	// pending collects the datagrams of the next sendmmsg; spare is the
	// other queue, nil while the sender flushes it.
	pending, spare *sendQueue
	sending        bool // a goroutine is flushing
}

// sendQueue is a batch of datagrams for one sendmmsg, encoded in its own
// buffers.
type sendQueue struct {
	e       *Endpoint
	out     []unix.Mmsghdr
	iov     []unix.Iovec
	buf     [][]byte
	name    [][sockaddrLen]byte
	queued  int
	sent    int
	flushFn func(fd uintptr) bool // q.flush, bound once
}

func newCombiner(e *Endpoint) *combiner {
	return &combiner{e: e, pending: newSendQueue(e), spare: newSendQueue(e)}
}

func newSendQueue(e *Endpoint) *sendQueue {
	n, size := e.cfg.Batch, e.cfg.Datagram
	q := &sendQueue{e: e, out: make([]unix.Mmsghdr, n), iov: make([]unix.Iovec, n),
		buf: make([][]byte, n), name: make([][sockaddrLen]byte, n)}
	slab := make([]byte, n*size)
	for i := range n {
		q.buf[i] = slab[i*size : i*size : (i+1)*size]
		q.out[i].Hdr.Name = &q.name[i][0]
		q.out[i].Hdr.Iov = &q.iov[i]
		q.out[i].Hdr.SetIovlen(1)
	}
	q.flushFn = q.flush
	return q
}

// send sends d to dst through the queue. It reports false, having done
// nothing, when dst cannot be addressed by sendmmsg or the queue is full:
// the caller then sends it itself.
func (c *combiner) send(dst netip.AddrPort, d []byte) bool {
	if !addressable(dst.Addr(), c.e.sys.family) {
		return false
	}
	c.mu.Lock()
	q := c.pending
	if q.queued == len(q.out) {
		c.mu.Unlock()
		return false
	}
	i := q.queued
	q.buf[i] = append(q.buf[i][:0], d...)
	q.iov[i].Base = unsafe.SliceData(q.buf[i])
	q.iov[i].SetLen(len(d))
	q.out[i].Hdr.Namelen = encodeSockaddr(&q.name[i], dst, c.e.sys.family)
	q.queued++
	if c.sending {
		c.mu.Unlock()
		return true
	}
	c.sending = true
	c.drain()
	return true
}

// drain sends the pending queue, and the one filled meanwhile, until one
// is empty; it is called with mu held and sending set, and returns with mu
// released and sending cleared.
func (c *combiner) drain() {
	for {
		q := c.pending
		c.pending, c.spare = c.spare, nil
		c.mu.Unlock()
		q.send()
		c.mu.Lock()
		c.spare = q
		if c.pending.queued == 0 {
			c.sending = false
			c.mu.Unlock()
			return
		}
	}
}

// send sends every queued datagram and empties the queue.
func (q *sendQueue) send() {
	q.sent = 0
	if err := q.e.sys.raw.Write(q.flushFn); err != nil {
		q.e.stats.sendErrors.Add(uint64(q.queued - q.sent)) // closed: the rest is lost
	}
	q.queued = 0
}

// flush runs sendmmsg until every queued datagram is sent or skipped, and
// returns false (wait until writable) when the socket buffer is full.
func (q *sendQueue) flush(fd uintptr) bool {
	for q.sent < q.queued {
		n, _, errno := unix.RawSyscall6(unix.SYS_SENDMMSG, fd,
			uintptr(unsafe.Pointer(&q.out[q.sent])), uintptr(q.queued-q.sent), 0, 0, 0)
		switch {
		case errno == unix.EINTR:
			continue
		case errno == unix.EAGAIN:
			return false
		case errno != 0 || n == 0:
			// sendmmsg fails only when its first datagram fails: skip it.
			q.e.stats.sendErrors.Add(1)
			q.e.cfg.Logger.Debug("cannot send datagram", "addr", q.e.addr,
				"to", decodeSockaddr(q.name[q.sent][:q.out[q.sent].Hdr.Namelen]), "err", errno)
			q.sent++
		default:
			var bytes uint64
			for _, h := range q.out[q.sent : q.sent+int(n)] {
				bytes += uint64(h.Len)
			}
			q.e.stats.sends.Add(1)
			q.e.stats.datagramsOut.Add(uint64(n))
			q.e.stats.bytesOut.Add(bytes)
			q.sent += int(n)
		}
	}
	return true
}
