package gateway

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

// boundedListener hands out boundedConns.
type boundedListener struct {
	net.Listener
	cfg *Config
}

func (l boundedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &boundedConn{Conn: c, cfg: l.cfg, guard: commandGuard{max: l.cfg.MaxCommandBytes}}, nil
}

// boundedConn bounds what a client can make the gateway hold: its guard
// refuses a command that cannot be run (larger than
// Config.MaxCommandBytes, or over Redis' limits) as soon as its bytes say
// so, and a command must arrive within Config.CommandTimeout once its
// first byte has. Either ends the connection with a protocol error. The
// parser (redcon's) reads through it; the handler calls completed when a
// command is whole.
type boundedConn struct {
	net.Conn
	cfg   *Config
	guard commandGuard
	// pending counts the bytes read since the last complete command, the
	// first of which arrived at since. Only the connection's goroutine
	// uses them: redcon reads and calls the handler on it.
	pending int
	since   time.Time
	// refusal, when set, is the error reply of the input refused: the
	// next read fails with it.
	refusal string
}

// errCommandTooSlow ends a connection whose command did not arrive in
// time.
var errCommandTooSlow = errors.New("command not complete in time")

func (c *boundedConn) Read(p []byte) (int, error) {
	if c.refusal != "" {
		c.refuse(c.refusal)
		return 0, errCommandRefused
	}
	pending := c.pending
	var deadline time.Time
	switch {
	case pending > 0:
		deadline = c.since.Add(c.cfg.CommandTimeout)
	case c.cfg.IdleTimeout > 0:
		deadline = time.Now().Add(c.cfg.IdleTimeout)
	}
	if err := c.SetReadDeadline(deadline); err != nil {
		return 0, err
	}
	n, err := c.Conn.Read(p)
	if pending == 0 && n > 0 {
		c.since = time.Now()
	}
	c.pending += n
	if errors.Is(err, os.ErrDeadlineExceeded) && pending > 0 {
		c.refuse(fmt.Sprintf("ERR Protocol error: command not complete within %s", c.cfg.CommandTimeout))
		return n, errCommandTooSlow
	}
	if n, c.refusal = c.guard.scan(p[:n]); c.refusal != "" {
		if n == 0 {
			c.refuse(c.refusal)
			return 0, errCommandRefused
		}
		return n, nil // the commands before a refused one are run first
	}
	return n, err
}

// completed says a command is whole: the bytes read so far are its.
func (c *boundedConn) completed() { c.pending = 0 }

// refuse writes a final error reply, best effort.
func (c *boundedConn) refuse(msg string) {
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.Write(appendError(nil, msg))
}
