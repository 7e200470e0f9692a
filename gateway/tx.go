package gateway

import (
	"bytes"
	"strings"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/dataplane/respframe"
)

// Transactions: MULTI queues a connection's commands, EXEC has the Redis
// of their keys' shard run them as one (client.Session.Exec), DISCARD
// drops them; WATCH holds keys on a connection of the session's own to
// their shard's Redis, so that EXEC does nothing when one of them changed.
// The keys of a transaction and of its WATCH must be on one storage shard,
// as Redis Cluster requires them in one slot: CROSSSLOT otherwise.

// txState is a connection's transaction: only the goroutine running the
// connection's pipeline uses it (commands run alone while it queues).
type txState struct {
	// queuing: MULTI was sent, and neither EXEC nor DISCARD since.
	queuing bool
	// dirty: a command was refused while queuing; EXEC aborts.
	dirty  bool
	queued [][][]byte // copies of the commands queued
	// watch holds the WATCHed keys; nil before the first WATCH.
	watch *client.Session
}

// reset ends the queuing and drops the commands queued.
func (t *txState) reset() {
	t.queuing, t.dirty, t.queued = false, false, nil
}

// end forgets the transaction and closes the watch's connection: the
// connection ended.
func (t *txState) end() {
	t.reset()
	if t.watch != nil {
		t.watch.Close()
		t.watch = nil
	}
}

// txCommands are the table's entries for transactions.
func txCommands() []*command {
	return []*command{
		{name: "multi", arity: 1, flags: []string{"noscript", "loading", "stale", "fast", "allow_busy"}, alone: true, run: runMulti},
		{name: "exec", arity: 1, flags: []string{"noscript", "loading", "stale", "skip_slowlog"}, alone: true, run: runExec},
		{name: "discard", arity: 1, flags: []string{"noscript", "loading", "stale", "fast", "allow_busy"}, alone: true, run: runDiscard},
		{name: "watch", arity: -2, flags: []string{"noscript", "loading", "stale", "fast", "allow_busy"},
			first: 1, last: -1, step: 1, alone: true, run: runWatch},
		{name: "unwatch", arity: 1, flags: []string{"noscript", "loading", "stale", "fast", "allow_busy"}, alone: true, inTx: true, run: runUnwatch},
	}
}

// notInTx are Redis' commands that Redis refuses inside MULTI, which the
// gateway does not run either: refused as Redis refuses them there.
var notInTx = map[string]bool{"save": true, "shutdown": true, "subscribe": true, "psubscribe": true, "ssubscribe": true}

// txControl are the commands that run, not queue, inside MULTI.
var txControl = map[string]bool{"multi": true, "exec": true, "discard": true, "watch": true, "quit": true}

// queue queues args, which c names, in sess's transaction and returns
// the reply to it: QUEUED, or an error that makes EXEC abort.
func queue(sess *session, c *command, args [][]byte) []byte {
	t := &sess.tx
	var refusal string
	switch {
	case c == nil && notInTx[strings.ToLower(string(args[0]))]:
		refusal = "ERR Command not allowed inside a transaction"
	case c == nil:
		refusal = unknownCommand(args)
	case !c.arityOK(len(args)):
		refusal = wrongArity(args[0])
	case !c.inTx:
		refusal = "ERR DistCache: " + c.name + " is not supported inside MULTI"
	}
	if refusal != "" {
		t.dirty = true
		return appendError(nil, refusal)
	}
	cp := make([][]byte, len(args))
	for i, a := range args {
		cp[i] = bytes.Clone(a) // args alias the connection's read buffer
	}
	t.queued = append(t.queued, cp)
	return appendSimple(nil, "QUEUED")
}

func runMulti(c *call, dst []byte) []byte {
	t := &c.sess.tx
	if t.queuing {
		return appendError(dst, "ERR MULTI calls can not be nested")
	}
	t.queuing = true
	return appendOK(dst)
}

func runDiscard(c *call, dst []byte) []byte {
	t := &c.sess.tx
	if !t.queuing {
		return appendError(dst, "ERR DISCARD without MULTI")
	}
	t.reset()
	unwatch(c)
	return appendOK(dst)
}

func runWatch(c *call, dst []byte) []byte {
	t := &c.sess.tx
	if t.queuing {
		return appendError(dst, "ERR WATCH inside MULTI is not allowed")
	}
	if t.watch == nil {
		t.watch = c.srv.cfg.Store.Session()
	}
	if err := t.watch.Watch(c.ctx, keyStrings(c.args[1:])); err != nil {
		return appendError(dst, errorReply(err, false))
	}
	return appendOK(dst)
}

func runUnwatch(c *call, dst []byte) []byte {
	unwatch(c)
	return appendOK(dst)
}

func unwatch(c *call) {
	if w := c.sess.tx.watch; w != nil {
		w.Unwatch(c.ctx)
	}
}

func runExec(c *call, dst []byte) []byte {
	t := &c.sess.tx
	if !t.queuing {
		return appendError(dst, "ERR EXEC without MULTI")
	}
	cmds, dirty := t.queued, t.dirty
	t.reset()
	if dirty {
		unwatch(c)
		return appendError(dst, "EXECABORT Transaction discarded because of previous errors.")
	}
	writes, reads := keysOfAll(cmds)
	s := t.watch
	if s == nil {
		s = c.srv.cfg.Store.Session()
	}
	exec, err := s.Exec(c.ctx, writes, reads, cmds)
	if err != nil {
		return appendError(dst, errorReply(err, true))
	}
	if !c.resp3 {
		return append(dst, exec...)
	}
	return appendExec3(dst, exec, cmds)
}

// keysOfAll are the keys cmds may write and the others, each once.
func keysOfAll(cmds [][][]byte) (writes, reads []string) {
	seen := map[string]bool{}
	for _, args := range cmds {
		c := lookup(args[0])
		for _, k := range c.keys(args) {
			if !seen[string(k)] {
				seen[string(k)] = true
				if c.write {
					writes = append(writes, string(k))
				} else {
					reads = append(reads, string(k))
				}
			}
		}
	}
	// A key both read and written counts as written.
	w := map[string]bool{}
	for _, k := range writes {
		w[k] = true
	}
	out := reads[:0]
	for _, k := range reads {
		if !w[k] {
			out = append(out, k)
		}
	}
	return writes, out
}

// appendExec3 appends exec, EXEC's RESP2 reply to cmds, for a RESP3
// client: each command's reply in its own shape.
func appendExec3(dst, exec []byte, cmds [][][]byte) []byte {
	line := bytes.Index(exec, []byte("\r\n"))
	if exec[0] != '*' || respframe.IsNilArray(exec) || line < 0 {
		return appendRESP3(dst, exec, shapeSame)
	}
	dst = append(dst, exec[:line+2]...)
	rest := exec[line+2:]
	for _, args := range cmds {
		n, err := respframe.Len(rest)
		if err != nil || n == 0 {
			break
		}
		dst = appendRESP3(dst, rest[:n], resp3ShapeOf(args))
		rest = rest[n:]
	}
	return dst
}

// keyStrings converts keys.
func keyStrings(keys [][]byte) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = string(k)
	}
	return out
}

// errCrossSlot is Redis Cluster's error for keys of several slots.
const errCrossSlot = "CROSSSLOT Keys in request don't hash to the same slot"
