//go:build linux

package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/placement/partmap"
)

// The floor is a measuring spike, not the product: the smallest gateway
// that serves redis-benchmark's pipelined GETs through the cache nodes. An
// event loop per core, each on a locked thread with its own epoll, its own
// listening socket (SO_REUSEPORT) and its own UDP socket; a receive batch
// of a connection is parsed at once, its GETs go to their candidates as one
// bundle per node, sent with one sendmmsg per loop iteration, and the
// replies, received with recvmmsg, are written back with one write per
// connection. There is no goroutine hand-off, no channel and no allocation
// per request. It omits everything the product needs beyond that:
// retransmission, fragments, other commands, authentication, map updates.
// Its CPU per GET is what the product's design can reach.

const (
	floorBatch   = 64       // datagrams per recvmmsg and sendmmsg
	floorEvents  = 128      // epoll events per wait
	floorPending = 1 << 16  // requests in flight per loop (a power of two)
	floorReadBuf = 64 << 10 // bytes read from a connection at once
	floorBundle  = wire.DefaultDatagram
)

// serveFloor runs the floor for the map in mapFile on addr, with one loop
// per CPU, until the process ends.
func serveFloor(mapFile, addr string) error {
	data, err := os.ReadFile(mapFile)
	if err != nil {
		return fmt.Errorf("cannot read the map: %w", err)
	}
	m, err := partmap.Decode(data)
	if err != nil {
		return err
	}
	p, err := partmap.Compile(m)
	if err != nil {
		return err
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return fmt.Errorf("cannot parse %s: %w", addr, err)
	}
	errs := make(chan error, runtime.NumCPU())
	for range runtime.NumCPU() {
		l, err := newFloorLoop(p, ap)
		if err != nil {
			return err
		}
		go func() { errs <- l.run() }()
	}
	return <-errs
}

// floorDest is a cache node and the bundle being filled for it.
type floorDest struct {
	sa     [unix.SizeofSockaddrInet4]byte
	bundle []byte
	n      int // records in bundle
}

// floorConn is a client connection: its unparsed input, its replies in
// order and what is ready to be written.
type floorConn struct {
	fd      int
	in      []byte
	replies []floorReply // ring of replies in command order
	head    int          // the oldest reply not written yet
	count   int          // replies in the ring
	out     []byte
	dirty   bool // in the loop's list of connections to write
}

type floorReply struct {
	done bool
	buf  []byte
}

// floorSlot maps a sequence number to the reply it fills.
type floorSlot struct {
	seq  uint64
	conn *floorConn
	idx  int
}

type floorLoop struct {
	place   *partmap.Placement
	dests   []floorDest // by the member's position in addrOf
	destOf  [][]int     // [layer][member] → index into dests, -1 if none
	loads   []uint32    // last load each dest reported
	epfd    int
	lfd     int
	ufd     int
	conns   map[int]*floorConn
	slots   []floorSlot
	seq     uint64
	dirty   []*floorConn
	cands   []partmap.Candidate
	events  []unix.EpollEvent
	readBuf []byte

	// recvmmsg and sendmmsg state, allocated once.
	inHdr  []unix.Mmsghdr
	inIov  []unix.Iovec
	inBuf  [][]byte
	outHdr []unix.Mmsghdr
	outIov []unix.Iovec
	recs   [][]byte
}

func newFloorLoop(p *partmap.Placement, addr netip.AddrPort) (*floorLoop, error) {
	l := &floorLoop{place: p, conns: map[int]*floorConn{}, slots: make([]floorSlot, floorPending),
		events: make([]unix.EpollEvent, floorEvents), readBuf: make([]byte, floorReadBuf)}
	m := p.Map()
	l.destOf = make([][]int, len(m.Layers))
	for li, layer := range m.Layers {
		l.destOf[li] = make([]int, len(layer.Members))
		for mi, mb := range layer.Members {
			l.destOf[li][mi] = -1
			a, err := netip.ParseAddrPort(mb.Address)
			if err != nil || !a.Addr().Is4() {
				continue
			}
			var d floorDest
			binary.NativeEndian.PutUint16(d.sa[0:2], unix.AF_INET)
			binary.BigEndian.PutUint16(d.sa[2:4], a.Port())
			v4 := a.Addr().As4()
			copy(d.sa[4:8], v4[:])
			d.bundle = make([]byte, wire.HeaderLen, floorBundle)
			l.destOf[li][mi] = len(l.dests)
			l.dests = append(l.dests, d)
		}
	}
	l.loads = make([]uint32, len(l.dests))
	var err error
	if l.epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return nil, fmt.Errorf("cannot create an epoll: %w", err)
	}
	if l.lfd, err = floorListen(addr); err != nil {
		return nil, err
	}
	if l.ufd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0); err != nil {
		return nil, fmt.Errorf("cannot open a UDP socket: %w", err)
	}
	_ = unix.SetsockoptInt(l.ufd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)
	_ = unix.SetsockoptInt(l.ufd, unix.SOL_SOCKET, unix.SO_SNDBUF, 4<<20)
	if err := unix.Bind(l.ufd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return nil, fmt.Errorf("cannot bind the UDP socket: %w", err)
	}
	for _, fd := range []int{l.lfd, l.ufd} {
		if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}); err != nil {
			return nil, fmt.Errorf("cannot watch a socket: %w", err)
		}
	}
	l.inHdr, l.inIov, l.inBuf = make([]unix.Mmsghdr, floorBatch), make([]unix.Iovec, floorBatch), make([][]byte, floorBatch)
	for i := range floorBatch {
		l.inBuf[i] = make([]byte, wire.MaxDatagram)
		l.inIov[i].Base = &l.inBuf[i][0]
		l.inIov[i].SetLen(wire.MaxDatagram)
		l.inHdr[i].Hdr.Iov = &l.inIov[i]
		l.inHdr[i].Hdr.SetIovlen(1)
	}
	l.outHdr, l.outIov = make([]unix.Mmsghdr, len(l.dests)), make([]unix.Iovec, len(l.dests))
	return l, nil
}

// floorListen opens a listening TCP socket on addr that other loops share
// (SO_REUSEPORT).
func floorListen(addr netip.AddrPort) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("cannot open a TCP socket: %w", err)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
		return -1, fmt.Errorf("cannot share the port: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: int(addr.Port()), Addr: addr.Addr().As4()}); err != nil {
		return -1, fmt.Errorf("cannot listen on %s: %w", addr, err)
	}
	if err := unix.Listen(fd, 1024); err != nil {
		return -1, fmt.Errorf("cannot listen on %s: %w", addr, err)
	}
	return fd, nil
}

func (l *floorLoop) run() error {
	runtime.LockOSThread()
	for {
		n, err := unix.EpollWait(l.epfd, l.events, -1)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return fmt.Errorf("cannot wait for events: %w", err)
		}
		for _, ev := range l.events[:n] {
			switch fd := int(ev.Fd); fd {
			case l.lfd:
				l.accept()
			case l.ufd:
				l.receive()
			default:
				if c := l.conns[fd]; c != nil {
					l.read(c)
				}
			}
		}
		l.sendBundles()
		l.writeConns()
	}
}

func (l *floorLoop) accept() {
	for {
		fd, _, err := unix.Accept4(l.lfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		if err != nil {
			return // EAGAIN, or another loop took it
		}
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
		l.conns[fd] = &floorConn{fd: fd, replies: make([]floorReply, 1024)}
		_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)})
	}
}

func (l *floorLoop) closeConn(c *floorConn) {
	_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, c.fd, nil)
	_ = unix.Close(c.fd)
	delete(l.conns, c.fd)
	c.fd = -1
}

// read takes what the connection sent and starts its complete commands.
func (l *floorLoop) read(c *floorConn) {
	n, err := unix.Read(c.fd, l.readBuf)
	if n <= 0 {
		if err == nil || !errors.Is(err, unix.EAGAIN) {
			l.closeConn(c)
		}
		return
	}
	c.in = append(c.in, l.readBuf[:n]...)
	used := 0
	for {
		key, size, ok := parseGet(c.in[used:])
		if size == 0 {
			break
		}
		used += size
		if !ok {
			idx := c.push()
			l.reply(c, idx, append(c.replies[idx].buf[:0], "-ERR the floor serves GET only\r\n"...))
			continue
		}
		l.get(c, key)
	}
	c.in = c.in[:copy(c.in, c.in[used:])]
}

// push adds a reply slot in command order and returns its index.
func (c *floorConn) push() int {
	if c.count == len(c.replies) {
		grown := make([]floorReply, 2*len(c.replies))
		for i := range c.count {
			grown[i] = c.replies[(c.head+i)%len(c.replies)]
		}
		c.replies, c.head = grown, 0
	}
	i := (c.head + c.count) % len(c.replies)
	c.count++
	c.replies[i].done = false
	return i
}

// get routes a GET to the less loaded of its candidates, into its bundle.
func (l *floorLoop) get(c *floorConn, key []byte) {
	idx := c.push()
	skey := unsafe.String(unsafe.SliceData(key), len(key))
	l.cands = l.place.Candidates(skey, l.cands[:0])
	best := -1
	for _, cd := range l.cands {
		if cd.Fenced || cd.Switch {
			continue
		}
		if d := l.destOf[cd.Layer][cd.Member]; d >= 0 && (best < 0 || l.loads[d] < l.loads[best]) {
			best = d
		}
	}
	if best < 0 || len(key) > wire.MaxKeyLen {
		l.reply(c, idx, append(c.replies[idx].buf[:0], "-ERR no candidate\r\n"...))
		return
	}
	l.seq++
	slot := &l.slots[l.seq&(floorPending-1)]
	slot.seq, slot.conn, slot.idx = l.seq, c, idx
	d := &l.dests[best]
	if len(d.bundle)+wire.BundleRecordPrefix+wire.HeaderLen+len(key) > floorBundle {
		l.sendBundles()
	}
	m := wire.Message{Header: wire.Header{Op: wire.OpGet, Seq: l.seq, MapVersion: uint64(l.place.Version())}, Key: key}
	at := len(d.bundle)
	d.bundle = append(d.bundle, 0, 0)
	d.bundle, _, _ = wire.AppendDatagram(d.bundle, &m, 0, floorBundle)
	binary.BigEndian.PutUint16(d.bundle[at:], uint16(len(d.bundle)-at-wire.BundleRecordPrefix))
	d.n++
}

// sendBundles sends every filled bundle with one sendmmsg: a bundle of one
// record goes as that record alone.
func (l *floorLoop) sendBundles() {
	k := 0
	for i := range l.dests {
		d := &l.dests[i]
		if d.n == 0 {
			continue
		}
		b := d.bundle
		if d.n == 1 {
			b = b[wire.HeaderLen+wire.BundleRecordPrefix:]
		} else {
			wire.PutBundleHeader(b, len(b)-wire.HeaderLen)
		}
		l.outIov[k].Base = &b[0]
		l.outIov[k].SetLen(len(b))
		h := &l.outHdr[k].Hdr
		h.Name, h.Namelen = &d.sa[0], unix.SizeofSockaddrInet4
		h.Iov = &l.outIov[k]
		h.SetIovlen(1)
		k++
	}
	for sent := 0; sent < k; {
		n, _, errno := unix.RawSyscall6(unix.SYS_SENDMMSG, uintptr(l.ufd),
			uintptr(unsafe.Pointer(&l.outHdr[sent])), uintptr(k-sent), 0, 0, 0)
		if errno != 0 {
			break // lost: the spike does not retransmit
		}
		sent += int(n)
	}
	for i := range l.dests {
		l.dests[i].bundle, l.dests[i].n = l.dests[i].bundle[:wire.HeaderLen], 0
	}
}

// receive takes the nodes' replies and fills the replies they answer.
func (l *floorLoop) receive() {
	for {
		n, _, errno := unix.RawSyscall6(unix.SYS_RECVMMSG, uintptr(l.ufd),
			uintptr(unsafe.Pointer(&l.inHdr[0])), floorBatch, 0, 0, 0)
		if errno != 0 || n == 0 {
			return
		}
		for i := range int(n) {
			b := l.inBuf[i][:l.inHdr[i].Len]
			recs, err := wire.AppendMessages(l.recs[:0], b)
			if err != nil {
				continue
			}
			for _, r := range recs {
				l.answer(r)
			}
			l.recs = recs[:0]
		}
		if int(n) < floorBatch {
			return
		}
	}
}

// answer fills the reply a GET_REPLY answers.
func (l *floorLoop) answer(b []byte) {
	p, err := wire.Parse(b)
	if err != nil || p.Op != wire.OpGetReply {
		return
	}
	slot := &l.slots[p.Seq&(floorPending-1)]
	if slot.seq != p.Seq || slot.conn == nil || slot.conn.fd < 0 {
		return
	}
	c, idx := slot.conn, slot.idx
	slot.conn = nil
	buf := c.replies[idx].buf[:0]
	switch {
	case p.Status == wire.StatusNotFound:
		buf = append(buf, "$-1\r\n"...)
	case p.Status != wire.StatusOK || !p.Complete():
		buf = append(buf, "-ERR "...)
		buf = append(buf, p.Status.String()...)
		buf = append(buf, "\r\n"...)
	default:
		buf = append(buf, '$')
		buf = strconv.AppendInt(buf, int64(len(p.Fragment)), 10)
		buf = append(buf, "\r\n"...)
		buf = append(buf, p.Fragment...)
		buf = append(buf, "\r\n"...)
	}
	l.reply(c, idx, buf)
}

// reply completes slot idx of c and moves what is complete in order to
// its output.
func (l *floorLoop) reply(c *floorConn, idx int, buf []byte) {
	c.replies[idx].buf, c.replies[idx].done = buf, true
	for c.count > 0 && c.replies[c.head].done {
		c.out = append(c.out, c.replies[c.head].buf...)
		c.replies[c.head].done = false
		c.head = (c.head + 1) % len(c.replies)
		c.count--
	}
	if len(c.out) > 0 && !c.dirty {
		c.dirty = true
		l.dirty = append(l.dirty, c)
	}
}

// writeConns writes each connection's ready replies with one write.
func (l *floorLoop) writeConns() {
	for _, c := range l.dirty {
		c.dirty = false
		if c.fd < 0 {
			continue
		}
		for len(c.out) > 0 {
			n, err := unix.Write(c.fd, c.out)
			if err != nil || n <= 0 {
				break // the spike drops what a full socket does not take
			}
			c.out = c.out[n:]
		}
		c.out = c.out[:0]
	}
	l.dirty = l.dirty[:0]
}

// parseGet parses one RESP command at the start of b: size is 0 when it
// is not complete yet; ok says it is GET key, key aliasing b.
func parseGet(b []byte) (key []byte, size int, ok bool) {
	if len(b) < 1 || b[0] != '*' {
		return nil, 0, false
	}
	args, at, good := parseLen(b, 1)
	if !good {
		return nil, 0, false
	}
	isGet := args == 2
	for i := range args {
		if at >= len(b) || b[at] != '$' {
			return nil, 0, false
		}
		n, next, good := parseLen(b, at+1)
		if !good || next+n+2 > len(b) {
			return nil, 0, false
		}
		arg := b[next : next+n]
		if i == 0 && !(n == 3 && (arg[0]|0x20) == 'g' && (arg[1]|0x20) == 'e' && (arg[2]|0x20) == 't') {
			isGet = false
		}
		if i == 1 {
			key = arg
		}
		at = next + n + 2
	}
	return key, at, isGet
}

// parseLen reads a decimal length ended by CRLF at b[at:].
func parseLen(b []byte, at int) (n, next int, ok bool) {
	for i := at; i+1 < len(b); i++ {
		if b[i] == '\r' {
			if b[i+1] != '\n' {
				return 0, 0, false
			}
			return n, i + 2, true
		}
		if b[i] < '0' || b[i] > '9' {
			return 0, 0, false
		}
		n = n*10 + int(b[i]-'0')
	}
	return 0, 0, false
}
