//go:build linux

package transport

import (
	"net/netip"
	"sync"
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
	e *Endpoint
	mmsgOut
	sendFn func(fd uintptr) bool // q.sendAll on q.e, bound once
}

func newCombiner(e *Endpoint) *combiner {
	return &combiner{e: e, pending: newSendQueue(e), spare: newSendQueue(e)}
}

func newSendQueue(e *Endpoint) *sendQueue {
	q := &sendQueue{e: e, mmsgOut: newMmsgOut(e.cfg.Batch, e.cfg.Datagram, e.cfg.Bundle)}
	q.sendFn = func(fd uintptr) bool { return q.sendAll(q.e, fd) }
	return q
}

// send sends d to dst through the queue, in a bundle with the queue's other
// datagrams to dst where they fit one. It reports false, having done
// nothing, when dst cannot be addressed by sendmmsg or the queue is full:
// the caller then sends it itself.
func (c *combiner) send(dst netip.AddrPort, d []byte) bool {
	if !addressable(dst.Addr(), c.e.sys.family) {
		return false
	}
	c.mu.Lock()
	if !c.pending.add(d, dst, c.e.sys.family) {
		c.mu.Unlock()
		return false
	}
	if c.sending {
		c.mu.Unlock()
		return true
	}
	c.sending = true
	c.drain()
	return true
}

// sendMany is send for several datagrams, ds[i] to dsts[i], which leave
// in as few system calls as the queue allows. It returns how many, from
// the first, it took; the caller sends the rest itself.
func (c *combiner) sendMany(dsts []netip.AddrPort, ds [][]byte) int {
	c.mu.Lock()
	n := 0
	for n < len(ds) && addressable(dsts[n].Addr(), c.e.sys.family) && c.pending.add(ds[n], dsts[n], c.e.sys.family) {
		n++
	}
	if n == 0 || c.sending {
		c.mu.Unlock()
		return n
	}
	c.sending = true
	c.drain()
	return n
}

// drain sends the pending queue, and the one filled meanwhile, until one
// is empty; it is called with mu held and sending set, and returns with mu
// released and sending cleared.
func (c *combiner) drain() {
	for {
		q := c.pending
		c.pending, c.spare = c.spare, nil
		c.mu.Unlock()
		q.flush(q.e, q.sendFn)
		c.mu.Lock()
		c.spare = q
		if c.pending.queued == 0 {
			c.sending = false
			c.mu.Unlock()
			return
		}
	}
}
