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
	return &boundedConn{Conn: c, cfg: l.cfg}, nil
}

// boundedConn bounds what a client can make the gateway hold: the bytes
// read since the last complete command (Config.MaxCommandBytes), and the
// time a command may take to arrive once its first byte has
// (Config.CommandTimeout). Either ends the connection with a protocol
// error. The parser (redcon's) reads through it; the handler calls
// completed when a command is whole.
type boundedConn struct {
	net.Conn
	cfg *Config
	// pending counts the bytes read since the last complete command, the
	// first of which arrived at since. Only the connection's goroutine
	// uses them: redcon reads and calls the handler on it.
	pending int
	since   time.Time
}

// Errors that end a connection.
var (
	errCommandTooLarge = errors.New("command too large")
	errCommandTooSlow  = errors.New("command not complete in time")
)

func (c *boundedConn) Read(p []byte) (int, error) {
	pending := c.pending
	if pending > c.cfg.MaxCommandBytes {
		c.refuse(fmt.Sprintf("ERR Protocol error: command larger than %d bytes", c.cfg.MaxCommandBytes))
		return 0, errCommandTooLarge
	}
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
	return n, err
}

// completed says a command is whole: the bytes read so far are its.
func (c *boundedConn) completed() { c.pending = 0 }

// refuse writes a final error reply, best effort.
func (c *boundedConn) refuse(msg string) {
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.Write([]byte("-" + msg + "\r\n"))
}
