//go:build linux

package gateway

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/redcon"
	"golang.org/x/sys/unix"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/dataplane/transport"
)

// Event loops: how the gateway serves plaintext connections on Linux.
//
// Each loop runs on a locked thread with an epoll of its own, over its
// connections, the shared listening socket (EPOLLEXCLUSIVE: one loop takes
// each new connection), an eventfd by which other goroutines hand it work
// back and, when the store's transport is polled, the store's UDP socket,
// whose replies it receives itself (transport.Poller). A loop reads every
// readable connection's pipeline in one pass. The pipelines of GETs and
// MGETs, from all its connections, leave as one round of reads
// (loopround_linux.go, client.Client.GetManyFunc), so the GETs for one
// cache node share a bundle whichever connection sent them, and the loop
// is woken once for all their replies; the pipelines of plain SETs of
// distinct keys leave as one round of writes (PutManyFunc), and those of
// INCRs and DECRs of distinct keys as one round of increments
// (IncrByManyFunc). A pipeline with any other command runs on a worker
// goroutine, as the goroutine server runs it (Server.execute), and its
// replies come back through the eventfd. Each connection has at most one
// pipeline in flight, so its replies keep its commands' order. Replies are
// written at the end of the pass, one write per connection.

// loopTick is how often a loop with connections looks for commands that
// have not arrived in time and idle connections.
const loopTick = 100 * time.Millisecond

// loopEvents is the most epoll events one wait takes.
const loopEvents = 256

type eventLoop struct {
	srv    *Server
	epfd   int
	wakefd int // eventfd: work handed back
	lfd    int // the listening socket, shared by every loop
	conns  map[int]*loopConn
	events []unix.EpollEvent
	// dirty are the connections with replies to write this pass.
	dirty []*loopConn
	// waiting are the pipelines of rounds not yet admitted into the
	// cluster (Config.MaxInFlight), in arrival order.
	waiting []*loopConn
	store   asyncStore // nil: no rounds
	// poller, when the store's transport is polled, receives the
	// cluster's replies on the loop's thread.
	poller *transport.Poller
	// pipes, when the store reads and writes Redis itself, are the
	// loop's own Redis connections (client.Pipes); they are the loop's
	// store then.
	pipes    *client.Pipes
	lastTick time.Time

	// mu guards posted and sleeping: what other goroutines hand back.
	mu     sync.Mutex
	posted []completion
	// sleeping: the loop is in (or about to enter) epoll_wait; a post
	// wakes it through wakefd.
	sleeping bool
	stopping atomic.Bool
}

// polledStore is a Store whose transport the loops receive for
// (client.Client with a Polled transport).
type polledStore interface {
	NewPoller() (*transport.Poller, error)
}

// pipedStore is a Store that reads and writes Redis on an event loop's
// own connections (client.Client.NewPipes).
type pipedStore interface {
	NewPipes(register func(old, fd int) error, post func(func())) *client.Pipes
}

// completion is work handed back to a loop: a pipeline's replies from a
// worker, a GET round the cluster answered, or a function to run on the
// loop's thread.
type completion struct {
	c       *loopConn
	replies [][]byte
	round   *round
	fn      func() // work for the loop's thread (client.Pipes)
}

func newEventLoop(s *Server, lfd int, store asyncStore) (*eventLoop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("cannot create an event loop: %w", err)
	}
	wakefd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		_ = unix.Close(epfd)
		return nil, fmt.Errorf("cannot create an event loop: %w", err)
	}
	l := &eventLoop{srv: s, epfd: epfd, wakefd: wakefd, lfd: lfd, conns: map[int]*loopConn{},
		events: make([]unix.EpollEvent, loopEvents), store: store}
	type watched struct {
		fd     int
		events uint32
	}
	watch := []watched{{wakefd, unix.EPOLLIN}, {lfd, unix.EPOLLIN | unix.EPOLLEXCLUSIVE}}
	if ps, ok := s.cfg.Store.(polledStore); ok {
		switch p, err := ps.NewPoller(); {
		case err == nil:
			l.poller = p
			watch = append(watch, watched{p.FD(), unix.EPOLLIN | unix.EPOLLET})
		case !errors.Is(err, transport.ErrNotPolled): // polled, and nobody would receive
			l.release()
			return nil, fmt.Errorf("cannot create an event loop: %w", err)
		}
	}
	if ps, ok := s.cfg.Store.(pipedStore); ok && store != nil {
		l.pipes = ps.NewPipes(l.watchRedis, func(f func()) { l.post(completion{fn: f}) })
		l.store = l.pipes
	}
	for _, r := range watch {
		if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, r.fd, &unix.EpollEvent{Events: r.events, Fd: int32(r.fd)}); err != nil {
			l.release()
			return nil, fmt.Errorf("cannot create an event loop: %w", err)
		}
	}
	return l, nil
}

// watchRedis adds a Redis connection's socket fd to the loop's epoll and
// removes old (-1: none).
func (l *eventLoop) watchRedis(old, fd int) error {
	if old >= 0 {
		_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, old, nil)
	}
	if fd < 0 {
		return nil
	}
	return unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{
		Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(fd)})
}

func (l *eventLoop) release() {
	_ = unix.Close(l.epfd)
	_ = unix.Close(l.wakefd)
}

// run serves until stop.
func (l *eventLoop) run() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer l.release()
	for !l.stopping.Load() {
		n, err := unix.EpollWait(l.epfd, l.events, l.waitMillis())
		l.mu.Lock()
		l.sleeping = false
		l.mu.Unlock()
		if err != nil && err != unix.EINTR {
			l.srv.cfg.Logger.Error("event loop cannot wait for events", "err", err)
			break
		}
		for _, ev := range l.events[:max(n, 0)] {
			l.event(ev)
		}
		l.completions()
		l.sendRounds()
		if l.pipes != nil {
			l.pipes.Flush()
		}
		l.writeDirty()
		l.tick()
	}
	for _, c := range l.conns {
		l.closeConn(c)
	}
	if l.pipes != nil {
		l.pipes.Close()
	}
}

// waitMillis is epoll_wait's timeout: none when work was handed back
// since the last pass, a tick while connections may time out or GETs
// wait for admission, forever otherwise. It marks the loop sleeping.
func (l *eventLoop) waitMillis() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case len(l.posted) > 0 || l.stopping.Load():
		return 0
	case len(l.waiting) > 0:
		l.sleeping = true
		return 1
	case len(l.conns) > 0:
		l.sleeping = true
		return int(loopTick / time.Millisecond)
	}
	l.sleeping = true
	return -1
}

// post hands work back to the loop from another goroutine.
func (l *eventLoop) post(c completion) {
	l.mu.Lock()
	l.posted = append(l.posted, c)
	wake := l.sleeping
	l.sleeping = false
	l.mu.Unlock()
	if wake {
		l.wake()
	}
}

func (l *eventLoop) wake() {
	var one = [8]byte{1}
	_, _ = unix.Write(l.wakefd, one[:])
}

// stop ends run after its current pass.
func (l *eventLoop) stop() {
	l.stopping.Store(true)
	l.wake()
}

func (l *eventLoop) event(ev unix.EpollEvent) {
	switch fd := int(ev.Fd); fd {
	case l.wakefd:
		var b [8]byte
		_, _ = unix.Read(l.wakefd, b[:])
	case l.lfd:
		l.accept()
	case l.pollfd():
		for l.poller.Poll() > 0 { // edge-triggered: until nothing is left
		}
	default:
		c := l.conns[fd]
		if c == nil {
			if l.pipes != nil {
				l.pipes.Poll(fd)
			}
			return
		}
		if ev.Events&unix.EPOLLOUT != 0 && len(c.out) > 0 {
			l.markDirty(c)
		}
		if c.busy && ev.Events&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
			c.sess.close() // the client went away: its blocking command ends
		}
		if ev.Events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
			l.readPipeline(c)
		}
	}
}

// pollfd is the socket of the store's transport, -1 when not polled.
func (l *eventLoop) pollfd() int {
	if l.poller == nil {
		return -1
	}
	return l.poller.FD()
}

// accept takes the new connections, up to MaxConnections open.
func (l *eventLoop) accept() {
	s := l.srv
	for {
		fd, sa, err := unix.Accept4(l.lfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		switch {
		case err == unix.EINTR || err == unix.ECONNABORTED:
			continue
		case err != nil:
			if err != unix.EAGAIN {
				s.cfg.Logger.Debug("cannot accept a connection", "err", err)
			}
			return
		}
		if s.open.Add(1) > int64(s.cfg.MaxConnections) {
			s.open.Add(-1)
			s.stats.rejected.Add(1)
			_, _ = unix.Write(fd, []byte("-ERR max number of clients reached\r\n"))
			_ = unix.Close(fd)
			continue
		}
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
		local, _ := unix.Getsockname(fd)
		c := &loopConn{fd: fd, sess: newSession(s.nextID.Add(1), sockaddrString(sa), sockaddrString(local)),
			src: fdReader{fd: fd, in: guardedInput{guard: newCommandGuard(s.cfg.MaxCommandBytes)}}, lastActive: time.Now()}
		c.rd = redcon.NewReader(&c.src)
		err = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{
			Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(fd)})
		if err != nil {
			s.open.Add(-1)
			_ = unix.Close(fd)
			s.cfg.Logger.Debug("cannot watch a connection", "err", err)
			continue
		}
		l.conns[fd] = c
		s.stats.connections.Add(1)
		s.metrics.connections.Inc()
	}
}

// readPipeline reads c's next pipeline, if c may take one, and starts it.
// A command the guard discarded is answered at once, in its place.
func (l *eventLoop) readPipeline(c *loopConn) {
	if !c.mayRead() {
		return
	}
	cmds, err := c.rd.ReadCommands()
	for errors.Is(err, errDropped) {
		c.out = appendError(c.out, c.src.in.takeDropped())
		c.rd = redcon.NewReader(&c.src) // without the command's first bytes
		l.markDirty(c)
		if !c.mayRead() {
			return
		}
		cmds, err = c.rd.ReadCommands()
	}
	if err != nil {
		wait, refusal := c.src.readErrorKind(err)
		switch {
		case wait:
		case refusal != "":
			l.srv.protocolError()
			c.out = appendError(c.out, refusal)
			c.closing = true
			l.markDirty(c)
		case errors.Is(err, io.EOF) && len(c.out) > 0: // half-closed: the replies still go
			c.closing = true
			l.markDirty(c)
		default:
			l.closeConn(c)
		}
		return
	}
	c.busy = true
	l.srv.metrics.pipelineDepth.Observe(float64(len(cmds)))
	if l.store != nil {
		if kind, keys := l.srv.roundOf(c.sess, cmds); kind != notARound {
			c.cmds, c.kind, c.keys = cmds, kind, keys
			l.waiting = append(l.waiting, c)
			return
		}
	}
	l.runElsewhere(c, cmds)
}

// runElsewhere runs c's pipeline on a worker (a new goroutine when none
// is free) and hands its replies back.
func (l *eventLoop) runElsewhere(c *loopConn, cmds []redcon.Command) {
	f := func() { l.post(completion{c: c, replies: l.srv.execute(c.sess, cmds)}) }
	select {
	case l.srv.work.tasks <- f:
	default:
		go f()
	}
}

// completions takes what other goroutines handed back.
func (l *eventLoop) completions() {
	l.mu.Lock()
	posted := l.posted
	l.posted = nil
	l.mu.Unlock()
	for _, p := range posted {
		if p.fn != nil {
			p.fn()
			continue
		}
		if p.round != nil {
			l.roundDone(p.round)
			continue
		}
		l.pipelineDone(p.c, p.replies)
	}
}

// pipelineDone queues c's replies and reads its next pipeline.
func (l *eventLoop) pipelineDone(c *loopConn, replies [][]byte) {
	for _, r := range replies {
		c.out = append(c.out, r...)
	}
	clear(replies) // the session's scratch space keeps no reply alive
	l.ended(c)
}

// ended follows a pipeline of c that ended: its replies are queued.
func (l *eventLoop) ended(c *loopConn) {
	c.busy = false
	if c.closed {
		c.sess.tx.end()
		return
	}
	c.lastActive = time.Now()
	if c.sess.quit.Load() {
		c.closing = true
	}
	l.markDirty(c)
	l.readPipeline(c)
}

func (l *eventLoop) markDirty(c *loopConn) {
	if !c.dirty && !c.closed {
		c.dirty = true
		l.dirty = append(l.dirty, c)
	}
}

// writeDirty writes the replies of the pass, closes the connections that
// asked to be, and reads on for those whose replies were written.
func (l *eventLoop) writeDirty() {
	for len(l.dirty) > 0 {
		dirty := l.dirty
		l.dirty = nil
		for _, c := range dirty {
			c.dirty = false
			if c.closed {
				continue
			}
			if err := c.write(); err != nil || (c.closing && len(c.out) == 0) {
				l.closeConn(c)
				continue
			}
			l.readPipeline(c) // a pipeline held back by unwritten replies
		}
		clear(dirty)
	}
}

// tick closes the connections whose command or silence took too long.
func (l *eventLoop) tick() {
	now := time.Now()
	if now.Sub(l.lastTick) < loopTick {
		return
	}
	l.lastTick = now
	if l.pipes != nil {
		l.pipes.Expire(now)
	}
	for _, c := range l.conns {
		if over, refusal := c.overdue(&l.srv.cfg, now); over {
			if refusal == "" {
				l.closeConn(c)
				continue
			}
			l.srv.protocolError()
			c.out = appendError(c.out, refusal)
			c.closing = true
			l.markDirty(c)
		}
	}
	l.writeDirty()
}

func (l *eventLoop) closeConn(c *loopConn) {
	if c.closed {
		return
	}
	c.closed = true
	c.sess.close()
	if !c.busy { // else its pipeline ends it (ended)
		c.sess.tx.end()
	}
	delete(l.conns, c.fd)
	_ = unix.Close(c.fd)
	l.srv.open.Add(-1)
	l.srv.metrics.connections.Dec()
}

// sockaddrString is a socket address as Redis prints it (CLIENT INFO).
func sockaddrString(sa unix.Sockaddr) string {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port)).String()
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(a.Addr), uint16(a.Port)).String()
	}
	return ""
}
