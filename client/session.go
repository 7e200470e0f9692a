package client

import (
	"context"
	"fmt"

	"github.com/distcache/distcache/dataplane/respframe"
)

// Session is an application connection's state at the storage shards: the
// keys it WATCHes, on a connection of its own to their shard's Redis, which
// its next transaction runs on (atomic.go). The zero Session of a client
// (Client.Session) watches nothing. It is used by one goroutine at a time.
type Session struct {
	c *Client
	// shard and conn are the WATCH's; conn nil: nothing watched.
	shard int
	conn  *shardConn
}

// Session returns a new session of c.
func (c *Client) Session() *Session { return &Session{c: c} }

// Watch WATCHes keys at their shard's Redis: the session's next Exec does
// nothing if one of them changes before it. The keys must be on one shard,
// and on the shard of the keys the session already watches.
func (s *Session) Watch(ctx context.Context, keys []string) error {
	shard, err := s.c.ShardOf(keys)
	if err != nil {
		return err
	}
	if s.conn != nil && shard != s.shard {
		return fmt.Errorf("cannot watch %q with the keys watched before: %w", keys[0], ErrCrossShard)
	}
	if s.conn == nil {
		addr, err := s.c.redisAddr(shard, false)
		if err != nil {
			return fmt.Errorf("cannot watch %q: %w", keys[0], err)
		}
		if s.conn, err = s.c.shardConn.get(ctx, addr); err != nil {
			return err
		}
		s.shard = shard
	}
	cmd := make([][]byte, 0, 1+len(keys))
	cmd = append(cmd, cmdWatch)
	for _, k := range keys {
		cmd = append(cmd, []byte(k))
	}
	replies, err := s.conn.do(ctx, cmd)
	if err == nil {
		if e := respframe.Error(replies[0]); e != "" {
			err = fmt.Errorf("redis: %s: %w", e, ErrInternal)
		}
	}
	if err != nil {
		s.Unwatch(ctx)
		return fmt.Errorf("cannot watch %q: %w", keys[0], err)
	}
	return nil
}

// Unwatch forgets the keys watched.
func (s *Session) Unwatch(ctx context.Context) {
	if s.conn == nil {
		return
	}
	if _, err := s.conn.do(ctx, [][]byte{cmdUnwatch}); err == nil {
		s.c.shardConn.put(s.conn)
	}
	s.conn = nil
}

// Close ends the session.
func (s *Session) Close() {
	if s.conn != nil {
		_ = s.conn.close()
		s.conn = nil
	}
}

// Exec runs cmds, whole Redis commands, as one transaction (MULTI and
// EXEC) at the shard of their keys, and returns EXEC's reply as Redis sent
// it (RESP2): an array of the commands' replies, the null array when a
// watched key changed, or an error (EXECABORT). writes are the keys the
// commands may write, reads the others; every one must be on the shard of
// the keys watched. The watch ends with it.
//
// While the session watches keys, a cache that takes one of writes back
// after its release ends the transaction as a changed key would: EXEC's
// null array, which an application that WATCHes retries. Without a
// watch, the client starts again, attemptsToRelease times at most.
func (s *Session) Exec(ctx context.Context, writes, reads []string, cmds [][][]byte) ([]byte, error) {
	replies, err := s.exec(ctx, writes, reads, cmds)
	if err != nil {
		return nil, err
	}
	return replies[len(replies)-1], nil
}

// exec is Exec, returning the replies to MULTI, to each command (QUEUED
// or Redis' refusal) and to EXEC.
func (s *Session) exec(ctx context.Context, writes, reads []string, cmds [][][]byte) ([][]byte, error) {
	defer s.Unwatch(ctx)
	keys := append(append(make([]string, 0, len(writes)+len(reads)), writes...), reads...)
	shard, err := s.c.ShardOf(keys)
	switch {
	case err != nil:
		return nil, err
	case s.conn != nil && len(keys) > 0 && shard != s.shard:
		return nil, fmt.Errorf("cannot run a transaction on %q with the keys watched: %w", keys[0], ErrCrossShard)
	case s.conn != nil:
		shard = s.shard
	}
	watching := s.conn != nil
	conn := s.conn
	if conn == nil {
		addr, err := s.c.redisAddr(shard, len(writes) > 0)
		if err != nil {
			return nil, fmt.Errorf("cannot run a transaction: %w", err)
		}
		if conn, err = s.c.shardConn.get(ctx, addr); err != nil {
			return nil, err
		}
		defer s.c.shardConn.put(conn)
	} else if !s.c.writesDirect(s.c.view.Load()) && len(writes) > 0 {
		return nil, fmt.Errorf("cannot run a transaction: %w: writes of several keys need direct writes", ErrNoStorageAccess)
	}
	tx := make([][][]byte, 0, len(cmds)+2)
	tx = append(append(append(tx, [][]byte{cmdMulti}), cmds...), [][]byte{cmdExec})
	const causeRefused = "a shim could not release one (its writes do not go direct)"
	cause := "a cache took one back"
	for range attemptsToRelease {
		if len(writes) > 0 {
			// A session that WATCHes cannot UNWATCH the set without
			// dropping its own keys: it releases first, then watches.
			if watching {
				held, err := heldOf(ctx, conn, writes, false)
				if err != nil {
					return nil, err
				}
				if ok, err := s.c.releaseHeld(ctx, writes, held); err != nil || !ok {
					if err != nil {
						return nil, err
					}
					cause = causeRefused
					continue
				}
			}
			held, err := heldOf(ctx, conn, writes, true)
			if err != nil {
				return nil, err
			}
			if anyOf(held) {
				if watching {
					return [][]byte{[]byte("*-1\r\n")}, nil
				}
				if _, err := conn.do(ctx, [][]byte{cmdUnwatch}); err != nil {
					return nil, err
				}
				if ok, err := s.c.releaseHeld(ctx, writes, held); err != nil || !ok {
					if err != nil {
						return nil, err
					}
					cause = causeRefused
				}
				continue
			}
		}
		replies, err := conn.do(ctx, tx...)
		if err != nil {
			return nil, fmt.Errorf("cannot run a transaction: %w: %w", ErrOutcomeUnknown, err)
		}
		exec := replies[len(replies)-1]
		if respframe.IsNilArray(exec) && !watching && len(writes) > 0 {
			continue // a cache took a key back
		}
		s.c.stats.atomics.Add(1)
		return replies, nil
	}
	return nil, fmt.Errorf("cannot run a transaction on %q: %s: %w", writes[0], cause, ErrKeysHeld)
}

func anyOf(bs []bool) bool {
	for _, b := range bs {
		if b {
			return true
		}
	}
	return false
}
