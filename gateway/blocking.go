package gateway

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"time"
)

// Blocking commands (BLPOP, BZPOPMIN, BLMOVE, XREAD with BLOCK...) wait at
// the Redis of their keys' shard, on a connection of their own, for as
// long as the application asked: they take no slot of --max-in-flight
// and no deadline of --op-timeout. When the application's connection
// closes, the wait ends and Redis drops the command, as it does for a
// client of its own that went away.
//
// A pop from a list or a sorted set, and a read of a stream, run as they
// are: no cache holds a key of those types, so they change no copy. BLMOVE
// and BRPOPLPUSH write their destination, which a cache may hold (as a
// missing key, or a string, which makes the move fail): they move with
// LMOVE as a command of two keys, after the destination left the caches,
// and when the source is empty, wait with a move of the source onto
// itself (BLMOVE src src LEFT LEFT, which leaves it as it was) and move
// again; another client that took the element first makes them wait
// again. Blocking commands of several connections wait in the order they
// reach Redis, which need not be the order they reached the gateway.

// nilBulk is RESP2's nil bulk string, a pop's or a move's "nothing".
var nilBulk = []byte("$-1\r\n")

// blockingCommands are the table's entries for the blocking commands.
func blockingCommands() []*command {
	var out []*command
	for _, b := range []shardCommand{ // each writes
		{name: "blpop", arity: -3, first: 1, last: -2, step: 1},
		{name: "brpop", arity: -3, first: 1, last: -2, step: 1},
		{name: "bzpopmin", arity: -3, first: 1, last: -2, step: 1},
		{name: "bzpopmax", arity: -3, first: 1, last: -2, step: 1},
		{name: "blmpop", arity: -5, keysOf: numKeys(2, 0)},
		{name: "bzmpop", arity: -5, keysOf: numKeys(2, 0)},
		{name: "blmove", arity: 6, first: 1, last: 2, step: 1},
		{name: "brpoplpush", arity: 4, first: 1, last: 2, step: 1},
	} {
		out = append(out, &command{name: b.name, arity: b.arity, flags: []string{"write", "blocking"},
			first: b.first, last: b.last, step: b.step, keysOf: b.keysOf,
			write: true, alone: true, blocking: true, inTx: true, run: runBlocking})
	}
	return out
}

// runBlocking runs a blocking command until it answers, its timeout
// passes or the application's connection closes.
func runBlocking(c *call, dst []byte) []byte {
	cmd := lookup(c.args[0])
	ctx := c.sess.blockingContext(c.srv.ctx)
	if d, ok := blockTimeout(cmd.name, c.args); ok && d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d+c.srv.cfg.OpTimeout)
		defer cancel()
	}
	keys := keyStrings(cmd.keys(c.args))
	c.srv.blocked.Add(1)
	c.srv.waiting.Store(c.sess.id, c.sess)
	defer func() {
		c.srv.waiting.Delete(c.sess.id)
		c.srv.blocked.Add(-1)
	}()
	var r []byte
	var err error
	switch cmd.name {
	case "blmove", "brpoplpush":
		r, err = blockingMove(ctx, c, keys)
	default:
		r, err = c.srv.cfg.Store.RunBlocking(ctx, keys, c.args, c.sess.setWaiting)
	}
	return appendShimReply(dst, c.args, r, err, c.resp3)
}

// blockingMove is BLMOVE or BRPOPLPUSH (see above).
func blockingMove(ctx context.Context, c *call, keys []string) ([]byte, error) {
	src, dst := c.args[1], c.args[2]
	from, to, timeout := []byte("RIGHT"), []byte("LEFT"), c.args[3] // BRPOPLPUSH
	if len(c.args) == 6 {
		from, to, timeout = c.args[3], c.args[4], c.args[5]
	}
	deadline, bounded := ctx.Deadline()
	move := [][]byte{[]byte("LMOVE"), src, dst, from, to}
	// As Redis: a source that has an element moves it at once.
	if moved, err := c.srv.cfg.Store.Run(ctx, keys, nil, move); err != nil || !bytes.Equal(moved, nilBulk) {
		return moved, err
	}
	for {
		wait := [][]byte{[]byte("BLMOVE"), src, src, []byte("LEFT"), []byte("LEFT"), timeout}
		r, err := c.srv.cfg.Store.RunBlocking(ctx, keys, wait, c.sess.setWaiting)
		if err != nil || r[0] != '$' || bytes.Equal(r, nilBulk) {
			return r, err // an error, or the timeout's null
		}
		moved, err := c.srv.cfg.Store.Run(ctx, keys, nil, move)
		if err != nil || !bytes.Equal(moved, nilBulk) {
			return moved, err
		}
		// Another client took the element: wait again, for what is left.
		if bounded {
			left := time.Until(deadline) - c.srv.cfg.OpTimeout
			if left <= 0 {
				return append([]byte(nil), nilBulk...), nil // the caller may convert it in place
			}
			timeout = strconv.AppendFloat(nil, left.Seconds(), 'f', 3, 64)
		}
	}
}

// runClientUnblock answers CLIENT UNBLOCK id [TIMEOUT | ERROR]: 1 when
// the connection id was waiting in a blocking command, which then answers
// as if its timeout passed, or with Redis' UNBLOCKED error.
func runClientUnblock(c *call, dst []byte) []byte {
	id, err := strconv.ParseInt(string(c.args[2]), 10, 64)
	if err != nil {
		return appendError(dst, "ERR value is not an integer or out of range")
	}
	withError := false
	if len(c.args) == 4 {
		switch strings.ToLower(string(c.args[3])) {
		case "timeout":
		case "error":
			withError = true
		default:
			return appendError(dst, "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
		}
	}
	v, ok := c.srv.waiting.Load(id)
	if !ok {
		return appendInt(dst, 0)
	}
	b := v.(*session).waiting()
	if b == nil {
		return appendInt(dst, 0)
	}
	done, err := b.Unblock(c.ctx, withError)
	if err != nil {
		return appendError(dst, errorReply(err, false))
	}
	if done {
		return appendInt(dst, 1)
	}
	return appendInt(dst, 0)
}

// blockTimeout is how long the blocking command args may wait; 0: as
// long as it takes. ok false: the timeout is not a number (Redis refuses
// the command at once).
func blockTimeout(name string, args [][]byte) (time.Duration, bool) {
	var arg []byte
	ms := false
	switch name {
	case "blpop", "brpop", "bzpopmin", "bzpopmax":
		arg = args[len(args)-1]
	case "blmove":
		arg = args[5]
	case "brpoplpush":
		arg = args[3]
	case "blmpop", "bzmpop":
		arg = args[1]
	case "xread", "xreadgroup":
		for i := 1; i+1 < len(args); i++ {
			if bytes.EqualFold(args[i], []byte("block")) {
				arg, ms = args[i+1], true
				break
			}
		}
	}
	f, err := strconv.ParseFloat(string(arg), 64)
	if err != nil || f < 0 {
		return 0, false
	}
	if ms {
		f /= 1000
	}
	return time.Duration(f * float64(time.Second)), true
}
