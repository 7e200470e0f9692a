package gateway

import (
	"bytes"
	"strconv"

	"github.com/distcache/distcache/dataplane/rediscmd"
)

// The commands of package rediscmd: each is sent to its key's storage shim
// as it is (client.Client.Command), which runs it in Redis inside the
// coherence protocol, and Redis' reply goes back to the client unchanged.

// shimCommands are the table's entries for package rediscmd's commands.
func shimCommands() []*command {
	var out []*command
	for _, spec := range rediscmd.All() {
		out = append(out, &command{
			name: spec.Name, arity: spec.Arity, flags: spec.Flags(),
			first: 1, last: 1, step: 1, write: spec.Write, run: atShim(spec.Write),
		})
	}
	return out
}

// atShim runs a command at its key's shim; write says whether it may
// change the key (a timeout then leaves its outcome unknown).
func atShim(write bool) func(c *call, dst []byte) []byte {
	return func(c *call, dst []byte) []byte {
		argv := make([][]byte, 0, len(c.args)-1)
		argv = append(argv, c.args[0])
		argv = append(argv, c.args[2:]...)
		r, err := c.srv.cfg.Store.Command(c.ctx, string(c.args[1]), argv)
		if err != nil {
			return appendError(dst, errorReply(err, write))
		}
		if c.resp3 {
			return appendRESP3Nulls(dst, r)
		}
		return append(dst, r...)
	}
}

// appendRESP3Nulls appends r, a RESP2 reply, with its null bulk strings
// and null arrays written as RESP3's null. A reply it cannot walk is
// appended as it is.
func appendRESP3Nulls(dst, r []byte) []byte {
	if !bytes.Contains(r, []byte("-1\r\n")) {
		return append(dst, r...)
	}
	out, rest, ok := resp3Element(dst, r)
	if !ok || len(rest) != 0 {
		return append(dst, r...)
	}
	return out
}

// resp3Element appends the first element of r as appendRESP3Nulls does
// and returns what follows it.
func resp3Element(dst, r []byte) (out, rest []byte, ok bool) {
	end := bytes.Index(r, []byte("\r\n"))
	if len(r) == 0 || end < 0 {
		return dst, nil, false
	}
	line, rest := r[:end+2], r[end+2:]
	switch r[0] {
	case '+', '-', ':':
		return append(dst, line...), rest, true
	case '$', '*':
		n, err := strconv.Atoi(string(r[1:end]))
		switch {
		case err != nil || n < -1:
			return dst, nil, false
		case n == -1:
			return append(dst, "_\r\n"...), rest, true
		case r[0] == '$':
			if len(rest) < n+2 {
				return dst, nil, false
			}
			return append(append(dst, line...), rest[:n+2]...), rest[n+2:], true
		}
		dst = append(dst, line...)
		for range n {
			if dst, rest, ok = resp3Element(dst, rest); !ok {
				return dst, nil, false
			}
		}
		return dst, rest, true
	}
	return dst, nil, false
}
