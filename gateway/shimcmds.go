package gateway

import (
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
			first: 1, last: 1, step: 1, write: spec.Write, atShim: true, inTx: true, run: atShim(spec.Write),
		})
	}
	return out
}

// atShim runs a command at its key's shim; write says whether it may
// change the key (a timeout then leaves its outcome unknown).
func atShim(write bool) func(c *call, dst []byte) []byte {
	return func(c *call, dst []byte) []byte {
		r, err := c.srv.cfg.Store.Command(c.ctx, string(c.args[1]), shimArgs(c.args))
		return appendShimReply(dst, c.args, r, err, c.resp3)
	}
}

// shimArgs are the strings a shim runs for args: the name, then the
// arguments after the key.
func shimArgs(args [][]byte) [][]byte {
	out := make([][]byte, 0, len(args)-1)
	out = append(out, args[0])
	return append(out, args[2:]...)
}

// appendShimReply appends the reply to args, a command the cluster ran
// with reply r (RESP2) or err, for a client of RESP3 or not.
func appendShimReply(dst []byte, args [][]byte, r []byte, err error, resp3 bool) []byte {
	switch {
	case err != nil:
		return appendError(dst, errorReply(err, lookup(args[0]).write))
	case resp3:
		return appendRESP3(dst, r, resp3ShapeOf(args))
	}
	return append(dst, r...)
}
