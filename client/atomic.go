package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/distcache/distcache/dataplane/heldkeys"
	"github.com/distcache/distcache/dataplane/respframe"
	"github.com/distcache/distcache/dataplane/wire"
)

// Operations on several keys of one shard, run by the shard's Redis
// itself: transactions (MULTI and EXEC, WATCH), scripts and functions, and
// the commands of several keys (SINTERSTORE, RENAME, LMOVE...). Redis runs
// each atomically, and the client hands its reply on as Redis sent it.
//
// Such an operation must not write a key that a cache may hold: the copy
// would go stale. So before it runs, every key it may write leaves the
// keys a cache may hold (package heldkeys) through its shim: an
// RMWRelease invalidates every copy of the key with the write's phase 1
// and takes it out of the set, leaving the copies invalid. The operation
// then runs in MULTI and EXEC on a connection that WATCHes the set and has
// found none of its keys in it: if a cache takes one of them in between
// (a shim adds it to the set before it reads the key for a cache), the
// set changes, Redis does not run the transaction, and the client starts
// again. When Redis runs it, none of its keys is in the set, which is the
// condition under which the package heldkeys argument lets a client write
// a key directly. Reads need none of this: Redis' answer is current when
// Redis gives it. A script must name every key it touches (as Redis
// Cluster requires): the keys it does not name are not released.
//
// Every key must be on one shard (ShardOf); the placement's hash tags let
// an application put keys on one shard.

// ErrCrossShard: the keys of one operation are on different storage
// shards.
var ErrCrossShard = errors.New("the keys are on different storage shards")

// ErrKeysHeld: a key of the operation stayed in the caches through
// attemptsToRelease attempts to release it; nothing ran.
var ErrKeysHeld = errors.New("the keys could not be taken out of the caches")

// attemptsToRelease bounds the rounds of releasing an operation's keys and
// trying to run it.
const attemptsToRelease = 5

var (
	cmdMulti   = []byte("MULTI")
	cmdExec    = []byte("EXEC")
	cmdWatch   = []byte("WATCH")
	cmdUnwatch = []byte("UNWATCH")
	cmdHeldAny = []byte("SMISMEMBER")
	heldKey    = []byte(heldkeys.Key)
)

// ShardOf returns the global index of the storage shard of keys
// (partmap.Placement.ShardIndex), 0 for no keys, or ErrCrossShard.
func (c *Client) ShardOf(keys []string) (int, error) {
	p := c.view.Load().p
	shard := 0
	for i, k := range keys {
		sh := p.ShardIndex(k)
		if i > 0 && sh != shard {
			return 0, fmt.Errorf("cannot run on %q and %q together: %w", keys[0], k, ErrCrossShard)
		}
		shard = sh
	}
	return shard, nil
}

// redisAddr is the address of the Redis of the shard of global index
// shard, or ErrNoStorageAccess; write asks for a shard whose keys clients
// may write directly.
func (c *Client) redisAddr(shard int, write bool) (string, error) {
	v := c.view.Load()
	switch {
	case v.storage == nil || c.cfg.Bypass:
		return "", ErrNoStorageAccess
	case write && !c.writesDirect(v):
		return "", fmt.Errorf("%w: writes of several keys need direct writes", ErrNoStorageAccess)
	}
	for _, r := range v.p.Map().Storage.Racks {
		if shard < len(r.Shards) {
			return r.Shards[shard].Redis, nil
		}
		shard -= len(r.Shards)
	}
	return "", fmt.Errorf("cannot find shard %d: %w", shard, ErrInternal)
}

// Run runs cmd, a whole Redis command, at the shard of its keys and
// returns Redis' reply (RESP2). writes are the keys it may write, reads
// the others. A command that writes runs as a transaction of its own
// (Session.Exec); a read-only one as it is.
func (c *Client) Run(ctx context.Context, writes, reads []string, cmd [][]byte) ([]byte, error) {
	if len(writes) > 0 {
		s := Session{c: c}
		replies, err := s.exec(ctx, writes, reads, [][][]byte{cmd})
		switch {
		case err != nil:
			return nil, err
		case len(replies) == 3 && respframe.Error(replies[1]) != "":
			return replies[1], nil // refused when queued: Redis' own reply to the command
		}
		return onlyReply(replies[len(replies)-1])
	}
	r, err := c.runDirect(ctx, reads, cmd, false, nil)
	if err == nil {
		c.stats.storageReads.Add(1)
	}
	return r, err
}

// RunBlocking runs cmd, a blocking command that pops from or reads keys
// of types no cache holds (BLPOP, BZPOPMIN, XREAD with BLOCK), at the
// Redis of its keys' shard, on a connection of its own for as long as it
// blocks, until ctx ends: Redis then drops the command, as it does for a
// client that went away. Lists, sorted sets and streams are never cached
// (a fill of one is refused), so a pop changes no copy. blocked, when not
// nil, is called with a handle on the wait before it begins, and with nil
// once it ended.
func (c *Client) RunBlocking(ctx context.Context, keys []string, cmd [][]byte, blocked func(*Blocked)) ([]byte, error) {
	return c.runDirect(ctx, keys, cmd, true, blocked)
}

// Blocked is a blocking command waiting at a shard's Redis.
type Blocked struct {
	c    *Client
	addr string
	id   []byte // the waiting connection's CLIENT ID at Redis
}

// Unblock ends the wait as Redis' CLIENT UNBLOCK does, from another
// connection: the command answers as if its timeout passed, or with
// Redis' UNBLOCKED error when withError. It reports whether the command
// was still waiting.
func (b *Blocked) Unblock(ctx context.Context, withError bool) (bool, error) {
	how := []byte("TIMEOUT")
	if withError {
		how = []byte("ERROR")
	}
	replies, err := b.c.shardConn.doAt(ctx, b.addr, [][]byte{[]byte("CLIENT"), []byte("UNBLOCK"), b.id, how})
	if err != nil {
		return false, fmt.Errorf("cannot unblock a command: %w", err)
	}
	return bytes.Equal(replies[0], []byte(":1\r\n")), nil
}

// runDirect runs cmd at the Redis of keys' shard as it is; blocking
// lets it wait as long as ctx lets it, and blocked is told of the wait
// (RunBlocking).
func (c *Client) runDirect(ctx context.Context, keys []string, cmd [][]byte, blocking bool, blocked func(*Blocked)) ([]byte, error) {
	shard, err := c.ShardOf(keys)
	if err != nil {
		return nil, err
	}
	addr, err := c.redisAddr(shard, false)
	if err != nil {
		return nil, fmt.Errorf("cannot run %s: %w", cmd[0], err)
	}
	conn, err := c.shardConn.get(ctx, addr)
	if err != nil {
		return nil, err
	}
	defer c.shardConn.put(conn)
	if blocked != nil {
		if conn.redisID == nil {
			r, err := conn.do(ctx, [][]byte{[]byte("CLIENT"), []byte("ID")})
			if err != nil {
				return nil, fmt.Errorf("cannot run %s: %w", cmd[0], err)
			}
			conn.redisID = bytes.TrimSpace(bytes.TrimPrefix(r[0], []byte(":")))
		}
		blocked(&Blocked{c: c, addr: addr, id: conn.redisID})
		defer blocked(nil)
	}
	conn.blocking = blocking
	replies, err := conn.do(ctx, cmd)
	conn.blocking = false
	if err != nil {
		return nil, fmt.Errorf("cannot run %s: %w: %w", cmd[0], ErrOutcomeUnknown, err)
	}
	return replies[0], nil
}

// onlyReply is the reply of the one command of exec, an EXEC's reply.
func onlyReply(exec []byte) ([]byte, error) {
	if len(exec) == 0 || exec[0] != '*' {
		return exec, nil // EXECABORT and the like: the command's reply
	}
	line := bytes.Index(exec, []byte("\r\n"))
	if line < 0 || string(exec[:line]) != "*1" {
		return nil, fmt.Errorf("cannot read the reply %q of a transaction of one command: %w", exec, ErrInternal)
	}
	return exec[line+2:], nil
}

// RunOnEveryShard runs cmd at every shard's Redis, in turn, and returns
// each shard's reply (SCRIPT LOAD, FUNCTION LOAD: every shard must know
// a script). The shards done keep what cmd did when one fails.
func (c *Client) RunOnEveryShard(ctx context.Context, cmd [][]byte) ([][]byte, error) {
	n := 0
	for _, r := range c.view.Load().p.Map().Storage.Racks {
		n += len(r.Shards)
	}
	out := make([][]byte, n)
	for shard := range n {
		addr, err := c.redisAddr(shard, false)
		if err != nil {
			return nil, fmt.Errorf("cannot run %s: %w", cmd[0], err)
		}
		replies, err := c.shardConn.doAt(ctx, addr, cmd)
		if err != nil {
			return nil, fmt.Errorf("cannot run %s at shard %d: %w: %w", cmd[0], shard, ErrOutcomeUnknown, err)
		}
		out[shard] = replies[0]
	}
	return out, nil
}

// releaseHeld takes each of keys that held marks out of the keys a cache
// may hold (RMWRelease at its shim); it reports false when one could not
// be.
func (c *Client) releaseHeld(ctx context.Context, keys []string, held []bool) (bool, error) {
	for i, k := range keys {
		if !held[i] {
			continue
		}
		r, err := c.rmw(ctx, k, wire.RMWRelease, nil)
		if err != nil {
			return false, fmt.Errorf("cannot release %q from the caches: %w", k, err)
		}
		c.stats.releases.Add(1)
		if string(r) != "1" {
			return false, nil
		}
	}
	return true, nil
}

// heldOf asks Redis which of keys a cache may hold; watch WATCHes the set
// of them first.
func heldOf(ctx context.Context, conn *shardConn, keys []string, watch bool) ([]bool, error) {
	ask := make([][]byte, 0, 2+len(keys))
	ask = append(ask, cmdHeldAny, heldKey)
	for _, k := range keys {
		ask = append(ask, []byte(k))
	}
	cmds := [][][]byte{ask}
	if watch {
		cmds = [][][]byte{{cmdWatch, heldKey}, ask}
	}
	replies, err := conn.do(ctx, cmds...)
	if err != nil {
		return nil, fmt.Errorf("cannot ask Redis which keys caches hold: %w", err)
	}
	r := replies[len(replies)-1]
	if e := respframe.Error(r); e != "" {
		return nil, fmt.Errorf("cannot ask Redis which keys caches hold: %s: %w", e, ErrInternal)
	}
	out := make([]bool, len(keys))
	// The reply is an array of integers, 0 or 1: "*n\r\n:1\r\n:0\r\n...".
	line := bytes.Index(r, []byte("\r\n"))
	elems := r[line+2:]
	for i := range out {
		if len(elems) < 4 {
			return nil, fmt.Errorf("cannot read SMISMEMBER's reply %q: %w", r, ErrInternal)
		}
		out[i] = elems[1] == '1'
		elems = elems[4:]
	}
	return out, nil
}
