package gateway

import (
	"errors"
	"io"
	"time"
)

// errDropped fails the read after the last byte of a command the guard
// discarded: the caller answers the command (guardedInput.takeDropped)
// and parses on with a new reader, which forgets the command's first
// bytes.
var errDropped = errors.New("command discarded")

// guardedInput is a connection's input as its parser (redcon's Reader)
// reads it: the bytes read from the connection, filtered by the
// connection's guard (guard.go).
type guardedInput struct {
	guard commandGuard
	// rest are bytes read and not filtered yet; restMore: they are an
	// incomplete count line, to filter with the bytes that follow.
	rest     []byte
	restMore bool
	// held is rest's array for an incomplete count line.
	held [maxCountLine]byte
	// rawErr is an error the connection returned with bytes, returned
	// by the next read that needs more.
	rawErr error
	// refusal, when set, is the error reply of the input refused: every
	// read fails with errCommandRefused.
	refusal string
	// dropped, when set, is the reply of a command discarded: the next
	// read fails with errDropped.
	dropped string
	// since is when the first byte of the command being read arrived
	// (Config.CommandTimeout), if one is (pending); continuing: the bytes
	// the connection is being read for continue it.
	since      time.Time
	continuing bool
}

// pending says whether a command has begun to arrive and is not whole
// yet.
func (in *guardedInput) pending() bool {
	return in.guard.state != atCommand || len(in.rest) > 0
}

// read fills p with the next bytes of commands: the rest first, then what
// raw reads from the connection (some bytes, or none and an error). p
// must be longer than maxCountLine; redcon reads through a bufio.Reader
// of 4096 bytes.
func (in *guardedInput) read(p []byte, raw func([]byte) (int, error)) (int, error) {
	for {
		switch {
		case in.refusal != "":
			return 0, errCommandRefused
		case in.dropped != "":
			return 0, errDropped
		}
		began := !in.pending() // the bytes read next begin a command
		rest, more := in.rest, in.restMore
		n := copy(p, rest)
		in.rest, in.restMore = rest[n:], false
		if n == 0 || more {
			m, err := in.readRaw(p[n:], raw, began)
			if m == 0 {
				in.rest, in.restMore = rest, more
				return 0, err
			}
			n += m
		}
		f := in.guard.filter(p[:n])
		if f.used < n {
			in.keep(p[f.used:n], f.more)
		}
		switch {
		case f.refusal != "":
			in.refusal = f.refusal
		case f.dropped != "":
			in.dropped = f.dropped
		}
		if f.keep > 0 {
			return f.keep, nil
		}
	}
}

// readRaw reads p from the connection: some bytes, or none and an error;
// began: they begin a command.
func (in *guardedInput) readRaw(p []byte, raw func([]byte) (int, error), began bool) (int, error) {
	if err := in.rawErr; err != nil {
		in.rawErr = nil
		return 0, err
	}
	if len(p) == 0 {
		return 0, io.ErrShortBuffer
	}
	in.continuing = !began
	n, err := raw(p)
	switch {
	case n > 0:
		if began {
			in.since = time.Now()
		}
		in.rawErr = err
		return n, nil
	case err == nil:
		return 0, io.ErrNoProgress
	}
	return 0, err
}

// keep keeps b, bytes read and not used, before the rest; more: they are
// an incomplete count line.
func (in *guardedInput) keep(b []byte, more bool) {
	if len(in.rest) == 0 && more && len(b) <= len(in.held) {
		in.rest, in.restMore = in.held[:copy(in.held[:], b)], true
		return
	}
	// After a discarded command: the commands that followed it.
	rest := make([]byte, 0, len(b)+len(in.rest))
	rest = append(append(rest, b...), in.rest...)
	in.rest, in.restMore = rest, more && len(in.rest) == 0
}

// takeDropped returns the reply of the command discarded, and lets the
// reads go on.
func (in *guardedInput) takeDropped() string {
	reply := in.dropped
	in.dropped = ""
	return reply
}
