package gateway

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"sync/atomic"

	"github.com/distcache/distcache/client"
)

// The commands that Redis runs on several keys of one shard, or on a key
// that is not their first argument: the Redis of their keys' shard runs
// each as it is (client.Client.Run), after the keys it may write left the
// caches, and its reply goes back unchanged. Keys of several shards get
// CROSSSLOT, as in Redis Cluster.

// shardCommand describes one: as command does, with keysOf for the keys a
// fixed place cannot say.
type shardCommand struct {
	name              string
	arity             int
	write             bool
	first, last, step int
	keysOf            func(args [][]byte) [][]byte
}

// shardCommandList lists them, grouped as Redis' documentation groups
// them.
var shardCommandList = []shardCommand{
	// Keys and strings.
	{name: "rename", arity: 3, write: true, first: 1, last: 2, step: 1},
	{name: "renamenx", arity: 3, write: true, first: 1, last: 2, step: 1},
	{name: "copy", arity: -3, write: true, first: 1, last: 2, step: 1},
	{name: "msetnx", arity: -3, write: true, first: 1, last: -1, step: 2},
	{name: "lcs", arity: -3, first: 1, last: 2, step: 1},
	{name: "object", arity: -2, keysOf: keyAt(2)},
	{name: "memory", arity: -2, keysOf: keyAt(2)}, // MEMORY USAGE key; the others at the first shard
	{name: "sort", arity: -2, write: true, keysOf: storeKeys(1)},
	{name: "sort_ro", arity: -2, first: 1, last: 1, step: 1},
	// Sets.
	{name: "sdiff", arity: -2, first: 1, last: -1, step: 1},
	{name: "sdiffstore", arity: -3, write: true, first: 1, last: -1, step: 1},
	{name: "sinter", arity: -2, first: 1, last: -1, step: 1},
	{name: "sinterstore", arity: -3, write: true, first: 1, last: -1, step: 1},
	{name: "sunion", arity: -2, first: 1, last: -1, step: 1},
	{name: "sunionstore", arity: -3, write: true, first: 1, last: -1, step: 1},
	{name: "sintercard", arity: -3, keysOf: numKeys(1, 0)},
	{name: "smove", arity: 4, write: true, first: 1, last: 2, step: 1},
	// Sorted sets.
	{name: "zdiff", arity: -3, keysOf: numKeys(1, 0)},
	{name: "zdiffstore", arity: -4, write: true, keysOf: numKeys(2, 1)},
	{name: "zinter", arity: -3, keysOf: numKeys(1, 0)},
	{name: "zinterstore", arity: -4, write: true, keysOf: numKeys(2, 1)},
	{name: "zintercard", arity: -3, keysOf: numKeys(1, 0)},
	{name: "zunion", arity: -3, keysOf: numKeys(1, 0)},
	{name: "zunionstore", arity: -4, write: true, keysOf: numKeys(2, 1)},
	{name: "zrangestore", arity: -5, write: true, first: 1, last: 2, step: 1},
	{name: "zmpop", arity: -4, write: true, keysOf: numKeys(1, 0)},
	// Lists.
	{name: "lmove", arity: 5, write: true, first: 1, last: 2, step: 1},
	{name: "rpoplpush", arity: 3, write: true, first: 1, last: 2, step: 1},
	{name: "lmpop", arity: -4, write: true, keysOf: numKeys(1, 0)},
	// HyperLogLog, bitmaps, geo.
	{name: "pfcount", arity: -2, write: true, first: 1, last: -1, step: 1}, // it may rewrite the sketch's cached count
	{name: "pfmerge", arity: -2, write: true, first: 1, last: -1, step: 1},
	{name: "bitop", arity: -4, write: true, first: 2, last: -1, step: 1},
	{name: "geosearchstore", arity: -8, write: true, first: 1, last: 2, step: 1},
	{name: "georadius", arity: -6, write: true, keysOf: storeKeys(1)},
	{name: "georadiusbymember", arity: -5, write: true, keysOf: storeKeys(1)},
	{name: "georadius_ro", arity: -6, first: 1, last: 1, step: 1},
	{name: "georadiusbymember_ro", arity: -5, first: 1, last: 1, step: 1},
	// Streams.
	{name: "xread", arity: -4, keysOf: streamKeys},
	{name: "xreadgroup", arity: -7, write: true, keysOf: streamKeys},
	{name: "xgroup", arity: -2, write: true, keysOf: keyAt(2)},
	{name: "xinfo", arity: -2, keysOf: keyAt(2)},
	// Scripts and functions: the keys they name.
	{name: "eval", arity: -3, write: true, keysOf: numKeys(2, 0)},
	{name: "evalsha", arity: -3, write: true, keysOf: numKeys(2, 0)},
	{name: "eval_ro", arity: -3, keysOf: numKeys(2, 0)},
	{name: "evalsha_ro", arity: -3, keysOf: numKeys(2, 0)},
	{name: "fcall", arity: -3, write: true, keysOf: numKeys(2, 0)},
	{name: "fcall_ro", arity: -3, keysOf: numKeys(2, 0)},
}

// shardCommands are the table's entries for shardCommandList, and for
// SCRIPT and FUNCTION (scripts.go).
func shardCommands() []*command {
	out := make([]*command, 0, len(shardCommandList)+2)
	for _, sc := range shardCommandList {
		flags := []string{"readonly"}
		if sc.write {
			flags = []string{"write"}
		}
		out = append(out, &command{name: sc.name, arity: sc.arity, flags: flags, first: sc.first, last: sc.last, step: sc.step,
			write: sc.write, inTx: true, keysOf: sc.keysOf, run: runAtShard})
	}
	return append(out, scriptCommands()...)
}

// runAtShard runs a command of shardCommandList at its keys' shard.
func runAtShard(c *call, dst []byte) []byte {
	cmd := lookup(c.args[0])
	keys := keyStrings(cmd.keys(c.args))
	var writes, reads []string
	if cmd.write {
		writes = keys
	} else {
		reads = keys
	}
	if blocks(c.args) {
		return runBlocking(c, dst)
	}
	if cmd.name == "eval" || cmd.name == "eval_ro" {
		c.loadEverywhere(c.args[1])
	}
	r, err := c.srv.cfg.Store.Run(c.ctx, writes, reads, c.args)
	return appendShimReply(dst, c.args, r, err, c.resp3)
}

// blocks says whether args is XREAD or XREADGROUP with BLOCK.
func blocks(args [][]byte) bool {
	name := args[0]
	if !bytes.EqualFold(name, []byte("xread")) && !bytes.EqualFold(name, []byte("xreadgroup")) {
		return false
	}
	for _, a := range args[1:] {
		if bytes.EqualFold(a, []byte("streams")) {
			return false
		}
		if bytes.EqualFold(a, []byte("block")) {
			return true
		}
	}
	return false
}

// keyAt is the key of a command whose key follows a subcommand (OBJECT
// ENCODING key, XGROUP CREATE key ...).
func keyAt(i int) func(args [][]byte) [][]byte {
	return func(args [][]byte) [][]byte {
		if len(args) <= i {
			return nil
		}
		return args[i : i+1]
	}
}

// numKeys locates the keys of a command that names their number at
// args[at], after fixed keys (ZUNIONSTORE's destination); nil when the
// number is not one Redis would take (Redis refuses the command then).
func numKeys(at, fixed int) func(args [][]byte) [][]byte {
	return func(args [][]byte) [][]byte {
		if len(args) <= at {
			return nil
		}
		n, err := strconv.Atoi(string(args[at]))
		if err != nil || n < 0 || at+1+n > len(args) {
			return nil
		}
		keys := make([][]byte, 0, fixed+n)
		keys = append(keys, args[1:1+fixed]...)
		return append(keys, args[at+1:at+1+n]...)
	}
}

// streamKeys are the keys of XREAD and XREADGROUP: the first half of the
// arguments after STREAMS.
func streamKeys(args [][]byte) [][]byte {
	for i := 1; i < len(args); i++ {
		if bytes.EqualFold(args[i], []byte("streams")) {
			rest := args[i+1:]
			return rest[:len(rest)/2]
		}
	}
	return nil
}

// storeKeys is the key at args[first] and, when the command has STORE
// or STOREDIST, its destination.
func storeKeys(first int) func(args [][]byte) [][]byte {
	return func(args [][]byte) [][]byte {
		if len(args) <= first {
			return nil
		}
		keys := [][]byte{args[first]}
		for i := first + 1; i+1 < len(args); i++ {
			if bytes.EqualFold(args[i], []byte("store")) || bytes.EqualFold(args[i], []byte("storedist")) {
				keys = append(keys, args[i+1])
			}
		}
		return keys
	}
}

// runTouch answers TOUCH key [key ...]: the keys that exist, each sent to
// its shard's Redis (which updates its access time), where the gateway
// reaches the shards' Redis; else counted as EXISTS counts them.
func runTouch(c *call, dst []byte) []byte {
	var n atomic.Int64
	err := each(c.ctx, c.args[1:], 1, func(ctx context.Context, _ int, kv [][]byte) error {
		r, err := c.srv.cfg.Store.Run(ctx, nil, []string{string(kv[0])}, [][]byte{[]byte("TOUCH"), kv[0]})
		if err == nil && bytes.Equal(r, []byte(":1\r\n")) {
			n.Add(1)
		}
		return err
	})
	switch {
	case errors.Is(err, client.ErrNoStorageAccess):
		return runExists(c, dst)
	case err != nil:
		return appendError(dst, errorReply(err, false))
	}
	return appendInt(dst, n.Load())
}
