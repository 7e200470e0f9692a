//go:build linux

package client

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/distcache/distcache/dataplane/heldkeys"
	"github.com/distcache/distcache/dataplane/rediscmd"
	"github.com/distcache/distcache/dataplane/redispipe"
	"github.com/distcache/distcache/dataplane/wire"
)

var (
	loadCommand = [][]byte{[]byte("SCRIPT"), []byte("LOAD"), []byte(heldkeys.CommandSource)}
	commandSHA  = []byte(heldkeys.Command.Hash())
	maxReply    = []byte(strconv.Itoa(wire.MaxValueLen))
	modeRead    = []byte("r")
	modeWrite   = []byte("w")
)

// CommandManyFunc is Client.CommandManyFunc with the commands that may go
// to Redis directly (Client.Command) on the pipes: read-only ones where
// the client reads storage itself, the others too where writes go
// direct. A command whose key a cache may hold, or that found its
// connection down, runs at its shim.
func (p *Pipes) CommandManyFunc(ctx context.Context, keys []string, args [][][]byte, replies [][]byte, errs []error, done func()) {
	c := p.c
	v := c.view.Load()
	conns := p.conns(v)
	if conns == nil || c.cfg.Bypass {
		c.CommandManyFunc(ctx, keys, args, replies, errs, done)
		return
	}
	values, ok := commandRMWs(keys, args, errs)
	w := &pipedCommands{c: c, ctx: ctx, keys: keys, args: args, values: values, replies: replies, errs: errs, start: time.Now(), done: done}
	direct := c.writesDirect(v)
	for _, i := range ok {
		spec := rediscmd.Lookup(args[i][0])
		mode := modeRead
		if spec.Write {
			mode = modeWrite
		}
		if (spec.Write && !direct) || checkKey(keys[i]) != nil ||
			!p.do(conns[v.p.ShardIndex(keys[i])], w, i, evalsha, commandSHA, two, []byte(keys[i]), held, mode,
				[]byte(rediscmd.PackArgs(args[i])), maxReply) {
			w.shim = append(w.shim, i)
			continue
		}
		w.left++
	}
	w.finish()
}

// pipedCommands are a round's commands on the pipes.
type pipedCommands struct {
	c       *Client
	ctx     context.Context
	keys    []string
	args    [][][]byte
	values  [][]byte // the shims' RMWs
	replies [][]byte
	errs    []error
	start   time.Time
	done    func()
	left    int   // replies still to come
	shim    []int // commands the shims run
}

// RedisReply settles keys[i]'s command, or leaves it to its shim.
func (w *pipedCommands) RedisReply(i int, rep redispipe.Reply) {
	c, write := w.c, rediscmd.Lookup(w.args[i][0]).Write
	switch {
	case rep.Kind == '$' && !rep.Nil && rep.Err == nil:
		w.replies[i] = append([]byte(nil), rep.Value...)
		if write {
			c.stats.storageWrites.Add(1)
		} else {
			c.stats.storageReads.Add(1)
		}
	case rep.Err == nil && (rep.Kind == '$' || bytes.HasPrefix(rep.Value, []byte("NOSCRIPT"))):
		c.stats.heldWrites.Add(1) // a cache may hold the key, or Redis lacks the script: not run
		w.shim = append(w.shim, i)
	case rep.Err != nil && !write:
		c.stats.storageFailures.Add(1)
		w.shim = append(w.shim, i) // a read: asked again at the shim
	case rep.Err != nil:
		c.stats.storageFailures.Add(1)
		w.errs[i] = fmt.Errorf("cannot run %s on %q: %w: redis: %w", w.args[i][0], w.keys[i], ErrOutcomeUnknown, rep.Err)
	default:
		w.errs[i] = fmt.Errorf("cannot run %s on %q: %w: redis: %s", w.args[i][0], w.keys[i], ErrInternal, rep.Value)
	}
	w.left--
	w.finish()
}

// finish calls done once every reply is in, after the shims ran the
// commands left to them.
func (w *pipedCommands) finish() {
	if w.left > 0 {
		return
	}
	w.c.stats.rmws.Add(uint64(len(w.shim)))
	w.c.writeRest(w.ctx, wire.OpRMW, wire.RMWCommand.String(), w.keys, w.values, w.replies, w.errs, w.shim, w.done)
}
