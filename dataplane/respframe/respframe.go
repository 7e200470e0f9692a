// Package respframe finds where a RESP2 reply ends, so that a connection
// can hand a reply on as the bytes Redis sent, without decoding it into
// values and encoding it again: a proxy forwards a transaction's or a
// script's reply this way. It reads the types a RESP2 server sends:
// simple strings, errors, integers, bulk strings and arrays, nested.
package respframe

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// Limits on what Len accepts: Redis' own bulk limit (proto-max-bulk-len),
// and arrays nested deeper than a script's reply can be before Redis
// refuses it (the Lua stack's limit).
const (
	MaxBulk  = 512 << 20
	maxLine  = 64 << 10
	maxDepth = 1 << 14
)

// ErrSyntax is wrapped by Len's errors: b does not start with a RESP2
// reply.
var ErrSyntax = errors.New("not a RESP2 reply")

// Len returns the length of the reply at the start of b, or 0 when b holds
// only part of it.
func Len(b []byte) (int, error) {
	return replyLen(b, 0)
}

func replyLen(b []byte, depth int) (int, error) {
	line := bytes.Index(b, []byte("\r\n"))
	if line < 0 {
		if len(b) > maxLine {
			return 0, fmt.Errorf("%w: a line of over %d bytes", ErrSyntax, maxLine)
		}
		return 0, nil
	}
	if line == 0 {
		return 0, fmt.Errorf("%w: an empty line", ErrSyntax)
	}
	switch b[0] {
	case '+', '-':
		return line + 2, nil
	case ':':
		if _, err := strconv.ParseInt(string(b[1:line]), 10, 64); err != nil {
			return 0, fmt.Errorf("%w: integer %q", ErrSyntax, b[1:line])
		}
		return line + 2, nil
	case '$':
		size, err := strconv.Atoi(string(b[1:line]))
		switch {
		case err != nil || size < -1 || size > MaxBulk:
			return 0, fmt.Errorf("%w: bulk length %q", ErrSyntax, b[1:line])
		case size == -1:
			return line + 2, nil
		}
		end := line + 2 + size
		if len(b) < end+2 {
			return 0, nil
		}
		if b[end] != '\r' || b[end+1] != '\n' {
			return 0, fmt.Errorf("%w: a bulk string without its CRLF", ErrSyntax)
		}
		return end + 2, nil
	case '*':
		n, err := strconv.Atoi(string(b[1:line]))
		switch {
		case err != nil || n < -1:
			return 0, fmt.Errorf("%w: array length %q", ErrSyntax, b[1:line])
		case depth >= maxDepth:
			return 0, fmt.Errorf("%w: arrays nested over %d deep", ErrSyntax, maxDepth)
		}
		off := line + 2
		for range max(n, 0) {
			m, err := replyLen(b[off:], depth+1)
			if err != nil || m == 0 {
				return 0, err
			}
			off += m
		}
		return off, nil
	}
	return 0, fmt.Errorf("%w: type %q", ErrSyntax, b[0])
}

// IsNilArray says whether reply is RESP2's null array (*-1), the reply of
// an EXEC that WATCH aborted.
func IsNilArray(reply []byte) bool { return bytes.Equal(reply, []byte("*-1\r\n")) }

// Error returns the text of an error reply, or "" for another reply.
func Error(reply []byte) string {
	if len(reply) < 3 || reply[0] != '-' {
		return ""
	}
	return string(reply[1 : len(reply)-2])
}
