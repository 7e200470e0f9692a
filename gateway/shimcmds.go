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
			return appendRESP3(dst, r, resp3ShapeOf(c.args))
		}
		return append(dst, r...)
	}
}
