//go:build linux

package gateway

import (
	"fmt"
	"net"
	"runtime"
	"sync"
)

// EventLoops says whether a gateway of cfg serves a TCP listener with
// event loops here: on Linux, without TLS, unless Loops is negative. Its
// client's transport should then be Polled (transport.Config): the loops
// receive the cluster's replies themselves, no reader goroutine between.
func EventLoops(cfg Config) bool { return cfg.TLS == nil && cfg.Loops >= 0 }

// defaultLoops is half the processors the runtime uses, at least one: the
// other half runs the client's transport readers, which take the
// cluster's replies, and the workers. On 2 cores one loop served pipelined
// GETs with 12 % less CPU than two (docs/benchmarks.md).
func defaultLoops() int { return max(1, runtime.GOMAXPROCS(0)/2) }

// serveLoops serves ln with event loops (loop_linux.go) until Close, and
// reports false, having done nothing, when they cannot serve it: TLS,
// Config.Loops negative, or a listener that is not TCP.
func (s *Server) serveLoops(ln net.Listener) (bool, error) {
	tl, ok := ln.(*net.TCPListener)
	if !ok || s.cfg.TLS != nil || s.cfg.Loops < 0 {
		return false, nil
	}
	raw, err := tl.SyscallConn()
	if err != nil {
		return true, fmt.Errorf("cannot serve the Redis protocol on %s: %w", ln.Addr(), err)
	}
	lfd := -1
	if err := raw.Control(func(fd uintptr) { lfd = int(fd) }); err != nil {
		return true, fmt.Errorf("cannot serve the Redis protocol on %s: %w", ln.Addr(), err)
	}
	n := s.cfg.Loops
	if n == 0 {
		n = defaultLoops()
	}
	store, _ := s.cfg.Store.(asyncStore)
	var loops []*eventLoop
	for range n {
		l, err := newEventLoop(s, lfd, store)
		if err != nil {
			for _, l := range loops {
				l.release()
			}
			return true, err
		}
		loops = append(loops, l)
	}
	s.mu.Lock()
	if s.ctx.Err() != nil { // closed before it served
		s.mu.Unlock()
		for _, l := range loops {
			l.release()
		}
		return true, nil
	}
	var wg sync.WaitGroup
	s.stopLoops = func() { // Close returns once no loop touches the store
		for _, l := range loops {
			l.stop()
		}
		wg.Wait()
	}
	for _, l := range loops {
		wg.Go(l.run)
	}
	s.mu.Unlock()
	wg.Wait()
	_ = ln.Close()
	return true, nil
}
