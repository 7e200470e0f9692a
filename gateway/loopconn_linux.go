//go:build linux

package gateway

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/tidwall/redcon"
	"golang.org/x/sys/unix"
)

// loopConn is a client connection served by an event loop. Only its loop
// touches it, except the pipeline a worker runs (runElsewhere), which
// reads cmds and sess and hands its replies back through the loop.
type loopConn struct {
	fd   int
	sess *session
	src  fdReader
	rd   *redcon.Reader
	// out holds the replies not written yet.
	out []byte
	// busy: a pipeline is in flight; the next is read when it is done.
	busy bool
	// cmds, kind and keys are the pipeline waiting for, or in, a round,
	// and how many keys it reads or writes.
	cmds []redcon.Command
	kind roundKind
	keys int
	// closing: close once out is written (QUIT, a refused command).
	closing bool
	closed  bool
	// dirty: in the loop's list of connections to write.
	dirty bool
	// lastActive is when the connection last completed a pipeline or
	// connected (IdleTimeout).
	lastActive time.Time
}

// maxUnwritten bounds the replies a connection may hold unwritten before
// its next pipeline is read: a client that does not read its replies
// stops being served, as a full socket would stop it.
const maxUnwritten = 1 << 20

// fdReader reads a connection's socket for redcon's Reader without
// blocking, through its guard (guardedInput): a command that cannot be
// run is refused as soon as its bytes say so, one whose bulk string is
// too large discarded as it arrives.
type fdReader struct {
	fd int
	in guardedInput
}

// errWouldBlock ends a read that found no input: the loop waits for the
// socket to be readable again.
var errWouldBlock = errors.New("no input")

func (r *fdReader) Read(p []byte) (int, error) { return r.in.read(p, r.readSocket) }

// readSocket reads p from the socket: some bytes, or none and an error.
func (r *fdReader) readSocket(p []byte) (int, error) {
	for {
		n, err := unix.Read(r.fd, p)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return 0, errWouldBlock
		case err != nil:
			return 0, err
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// readErrorKind says what ended a read of the connection's commands:
// nothing more to read for now, the client's end or a socket error, or a
// command refused (by the guard, or by redcon's parser).
func (r *fdReader) readErrorKind(err error) (wait bool, refusal string) {
	switch {
	case errors.Is(err, errWouldBlock):
		return true, ""
	case errors.Is(err, errCommandRefused):
		return false, r.in.refusal
	case errors.Is(err, io.EOF), errors.As(err, new(unix.Errno)):
		return false, ""
	}
	return false, "ERR " + err.Error() // redcon's protocol errors
}

// write writes what it can of out and keeps the rest.
func (c *loopConn) write() error {
	for len(c.out) > 0 {
		n, err := unix.Write(c.fd, c.out)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return nil // EPOLLOUT resumes it
		case err != nil:
			return err
		}
		c.out = c.out[:copy(c.out, c.out[n:])]
	}
	if cap(c.out) > keptOut {
		c.out = nil // an idle connection keeps no large buffer
	}
	return nil
}

// mayRead says whether the connection's next pipeline may be read.
func (c *loopConn) mayRead() bool {
	return !c.busy && !c.closing && !c.closed && len(c.out) < maxUnwritten
}

// overdue says whether the connection should close at now: a command
// begun and not complete within CommandTimeout (with its refusal), or
// nothing sent for IdleTimeout.
func (c *loopConn) overdue(cfg *Config, now time.Time) (bool, string) {
	switch {
	case c.busy || c.closed:
		return false, ""
	case c.src.in.pending() && now.Sub(c.src.in.since) > cfg.CommandTimeout:
		return true, fmt.Sprintf("ERR Protocol error: command not complete within %s", cfg.CommandTimeout)
	case !c.src.in.pending() && cfg.IdleTimeout > 0 && now.Sub(c.lastActive) > cfg.IdleTimeout:
		return true, ""
	}
	return false, ""
}
