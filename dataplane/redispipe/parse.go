package redispipe

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// maxBulk bounds a bulk reply (Redis's own proto-max-bulk-len default).
const maxBulk = 512 << 20

var errSyntax = errors.New("not a RESP2 reply")

// parse parses the reply at the start of b: the reply and its length, or
// n 0 when b holds only part of it. Arrays and RESP3 types are refused:
// the commands sent here answer none.
func parse(b []byte) (r Reply, n int, err error) {
	line := bytes.Index(b, []byte("\r\n"))
	if line < 0 {
		if len(b) > 64<<10 { // no line is this long
			return r, 0, fmt.Errorf("%w: a line of over 64 KiB", errSyntax)
		}
		return r, 0, nil
	}
	if line == 0 {
		return r, 0, fmt.Errorf("%w: an empty line", errSyntax)
	}
	r.Kind = b[0]
	body := b[1:line]
	switch r.Kind {
	case '+', '-':
		r.Value = body
		return r, line + 2, nil
	case ':':
		r.Int, err = strconv.ParseInt(string(body), 10, 64)
		if err != nil {
			return r, 0, fmt.Errorf("%w: integer %q", errSyntax, body)
		}
		return r, line + 2, nil
	case '$':
		size, err := strconv.Atoi(string(body))
		switch {
		case err != nil || size < -1 || size > maxBulk:
			return r, 0, fmt.Errorf("%w: bulk length %q", errSyntax, body)
		case size == -1:
			r.Nil = true
			return r, line + 2, nil
		}
		end := line + 2 + size
		if len(b) < end+2 {
			return r, 0, nil
		}
		if b[end] != '\r' || b[end+1] != '\n' {
			return r, 0, fmt.Errorf("%w: a bulk string without its CRLF", errSyntax)
		}
		r.Value = b[line+2 : end]
		return r, end + 2, nil
	}
	return r, 0, fmt.Errorf("%w: type %q", errSyntax, r.Kind)
}

// Reply is one command's reply. Value aliases the connection's buffer
// until the Waiter returns: copy what must outlive it.
type Reply struct {
	Kind  byte   // '+', '-', ':' or '$'; 0 with Err
	Value []byte // a simple string, an error's text or a bulk string
	Int   int64  // an integer
	Nil   bool   // a nil bulk string
	Err   error  // the connection failed: the command may or may not have run
}

// Waiter receives the replies of the commands it queued, with the tag it
// queued each with.
type Waiter interface {
	RedisReply(tag int, r Reply)
}

// AppendCommand appends args as a RESP array of bulk strings.
func AppendCommand(b []byte, args ...[]byte) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}
