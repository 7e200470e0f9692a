package gateway

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/tidwall/redcon"
)

// The goroutine server: a goroutine per connection reads a pipeline, runs
// it (Server.execute) and writes its replies. It serves TLS, Config.Loops
// negative, listeners other than TCP and systems without event loops.

// keptOut is the largest reply buffer a connection keeps once its
// replies are written.
const keptOut = 64 << 10

// serveConns serves ln with a goroutine per connection until Close.
func (s *Server) serveConns(ln net.Listener) error {
	s.mu.Lock()
	if s.ctx.Err() != nil { // closed before it served
		s.mu.Unlock()
		_ = ln.Close()
		return nil
	}
	s.ln = ln
	s.mu.Unlock()
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			// Out of file descriptors, say: wait a little, as net/http does.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.cfg.Logger.Debug("cannot accept a connection", "err", err, "retry_in", delay)
			select {
			case <-time.After(delay):
			case <-s.ctx.Done():
				return nil
			}
			continue
		}
		delay = 0
		go s.serveConn(nc)
	}
}

// closeConns stops serveConns: it closes the listener and every
// connection.
func (s *Server) closeConns() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		_ = s.ln.Close()
	}
	for nc := range s.conns {
		_ = nc.Close()
	}
}

// serveConn serves one connection until it ends, unless MaxConnections
// are open already.
func (s *Server) serveConn(nc net.Conn) {
	if s.open.Add(1) > int64(s.cfg.MaxConnections) {
		s.open.Add(-1)
		s.stats.rejected.Add(1)
		_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = nc.Write(appendError(nil, "ERR max number of clients reached"))
		_ = nc.Close()
		return
	}
	s.mu.Lock()
	if s.ctx.Err() != nil {
		s.mu.Unlock()
		s.open.Add(-1)
		_ = nc.Close()
		return
	}
	if s.conns == nil {
		s.conns = map[net.Conn]struct{}{}
	}
	s.conns[nc] = struct{}{}
	s.mu.Unlock()
	s.stats.connections.Add(1)
	s.metrics.connections.Inc()
	err := s.converse(nc)
	_ = nc.Close()
	s.mu.Lock()
	delete(s.conns, nc)
	s.mu.Unlock()
	s.open.Add(-1)
	s.metrics.connections.Dec()
	if isProtocolError(err) {
		s.protocolError()
	}
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		s.cfg.Logger.Debug("connection ended", "remote", nc.RemoteAddr(), "err", err)
	}
}

// converse reads nc's pipelines and writes their replies until the
// connection ends, and returns why.
func (s *Server) converse(nc net.Conn) error {
	sess := newSession(s.nextID.Add(1), nc.RemoteAddr().String(), nc.LocalAddr().String())
	defer func() { // the connection's blocking commands, WATCH and transaction end with it
		sess.close()
		sess.tx.end()
	}()
	in := &connInput{conn: nc, cfg: &s.cfg, in: guardedInput{guard: newCommandGuard(s.cfg.MaxCommandBytes)}}
	rd := redcon.NewReader(in)
	var out []byte
	for {
		cmds, err := rd.ReadCommands()
		if errors.Is(err, errDropped) { // answered in its place
			out = appendError(out[:0], in.in.takeDropped())
			rd = redcon.NewReader(in) // without the command's first bytes
			if _, err := nc.Write(out); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			if reply := in.refusalOf(err); reply != "" {
				_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
				_, _ = nc.Write(appendError(nil, reply))
			}
			return err
		}
		s.metrics.pipelineDepth.Observe(float64(len(cmds)))
		replies := s.execute(sess, cmds)
		out = out[:0]
		for _, r := range replies {
			out = append(out, r...)
		}
		clear(replies) // the session's scratch space keeps no reply alive
		if _, err := nc.Write(out); err != nil {
			return err
		}
		if cap(out) > keptOut {
			out = nil
		}
		if sess.quit.Load() {
			return nil
		}
	}
}

// isProtocolError says whether err, which ended a connection, was the
// client's: redcon's protocol errors, or a command refused or too slow.
func isProtocolError(err error) bool {
	return err != nil && (errors.Is(err, errCommandRefused) || errors.Is(err, errCommandTooSlow) ||
		strings.HasPrefix(err.Error(), "Protocol error: "))
}

// errCommandTooSlow ends a connection whose command did not arrive in
// time.
var errCommandTooSlow = errors.New("command not complete in time")

// connInput reads a connection for its goroutine, through its guard
// (guardedInput), and bounds the time a client takes: a command must
// arrive within Config.CommandTimeout once its first byte has, and a
// connection may be silent for Config.IdleTimeout.
type connInput struct {
	conn net.Conn
	cfg  *Config
	in   guardedInput
}

func (c *connInput) Read(p []byte) (int, error) { return c.in.read(p, c.readConn) }

// readConn reads p from the connection, within the time left.
func (c *connInput) readConn(p []byte) (int, error) {
	pending := c.in.continuing
	var deadline time.Time
	switch {
	case pending:
		deadline = c.in.since.Add(c.cfg.CommandTimeout)
	case c.cfg.IdleTimeout > 0:
		deadline = time.Now().Add(c.cfg.IdleTimeout)
	}
	if err := c.conn.SetReadDeadline(deadline); err != nil {
		return 0, err
	}
	n, err := c.conn.Read(p)
	if errors.Is(err, os.ErrDeadlineExceeded) && pending {
		c.in.refusal = fmt.Sprintf("ERR Protocol error: command not complete within %s", c.cfg.CommandTimeout)
		return 0, errCommandTooSlow
	}
	return n, err
}

// refusalOf is the error reply to the read error err: the input refused,
// or redcon's protocol error; "" for the client's end or the
// connection's error.
func (c *connInput) refusalOf(err error) string {
	switch {
	case errors.Is(err, errCommandRefused), errors.Is(err, errCommandTooSlow):
		return c.in.refusal
	case strings.HasPrefix(err.Error(), "Protocol error: "):
		return "ERR " + err.Error()
	}
	return ""
}
