package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/distcache/distcache/dataplane/redispipe"
	"github.com/distcache/distcache/dataplane/respframe"
)

// shardConn is a connection of its own to one shard's Redis, for what needs
// a connection's state there (WATCH, MULTI and EXEC) or a reply handed on
// as Redis sent it (a transaction's, a script's). It is used by one
// goroutine at a time.
type shardConn struct {
	addr string
	conn net.Conn
	in   []byte // bytes read and not yet handed out
	out  []byte // the commands being sent
	// broken: a send or a read failed, or ended in the middle of a reply;
	// the connection is closed and never reused.
	broken bool
	// blocking: the next do waits as long as its context lets it, without
	// shardConnTimeout (a blocking command's wait).
	blocking bool
	// redisID is Redis' CLIENT ID of the connection, once asked (nil).
	redisID []byte
}

// shardConnTimeout bounds a command on a shard connection whose context
// has no deadline.
const shardConnTimeout = 5 * time.Second

// dialer connects to a Redis server and logs in (redisconn.Settings.Dialer).
type dialer func(ctx context.Context, network, addr string) (net.Conn, error)

// dialShard connects to the Redis at addr with dial.
func dialShard(ctx context.Context, dial dialer, addr string) (*shardConn, error) {
	conn, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot connect to Redis at %s: %w", addr, err)
	}
	return &shardConn{addr: addr, conn: conn}, nil
}

// do sends cmds in one write and returns their replies, each the bytes of
// a RESP2 reply (errors included: they are replies). A failure breaks
// the connection: some of cmds may have run.
func (c *shardConn) do(ctx context.Context, cmds ...[][]byte) ([][]byte, error) {
	if c.broken {
		return nil, fmt.Errorf("cannot send to Redis at %s: the connection broke earlier", c.addr)
	}
	deadline, ok := ctx.Deadline()
	if !ok && !c.blocking {
		deadline = time.Now().Add(shardConnTimeout)
	}
	if err := c.conn.SetDeadline(deadline); err != nil {
		return nil, c.fail(err)
	}
	// A context that ends before its deadline (the application's
	// connection closed) ends the wait too.
	stop := context.AfterFunc(ctx, func() { _ = c.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	c.out = c.out[:0]
	for _, cmd := range cmds {
		c.out = redispipe.AppendCommand(c.out, cmd...)
	}
	if _, err := c.conn.Write(c.out); err != nil {
		return nil, c.fail(err)
	}
	replies := make([][]byte, 0, len(cmds))
	for len(replies) < len(cmds) {
		n, err := respframe.Len(c.in)
		switch {
		case err != nil:
			return nil, c.fail(err)
		case n > 0:
			replies = append(replies, append([]byte(nil), c.in[:n]...))
			c.in = c.in[n:]
			continue
		}
		if err := c.read(); err != nil {
			return nil, c.fail(err)
		}
	}
	if len(c.in) == 0 {
		c.in = c.in[:0:0] // let a large reply's buffer go
	}
	return replies, nil
}

// read appends what the connection has to c.in.
func (c *shardConn) read() error {
	if cap(c.in)-len(c.in) < 4096 {
		c.in = append(make([]byte, 0, 2*cap(c.in)+4096), c.in...)
	}
	n, err := c.conn.Read(c.in[len(c.in):cap(c.in)])
	c.in = c.in[:len(c.in)+n]
	if n > 0 {
		return nil
	}
	return err
}

// fail breaks c and returns err wrapped.
func (c *shardConn) fail(err error) error {
	c.broken = true
	_ = c.conn.Close()
	return fmt.Errorf("cannot talk to Redis at %s: %w", c.addr, err)
}

// close ends the connection.
func (c *shardConn) close() error {
	c.broken = true
	return c.conn.Close()
}

// shardConns keeps idle shard connections for reuse, per address.
type shardConns struct {
	dial   dialer     // set once, before use
	mu     sync.Mutex // guards idle and closed
	idle   map[string][]*shardConn
	closed bool
}

// maxIdleShardConns bounds the idle connections kept per address: as
// many as commands run at once (the gateway's --max-in-flight), since a
// connection closed and dialled again per command costs more than it.
const maxIdleShardConns = 128

// get returns an idle connection to addr, or a new one.
func (s *shardConns) get(ctx context.Context, addr string) (*shardConn, error) {
	s.mu.Lock()
	if idle := s.idle[addr]; len(idle) > 0 {
		c := idle[len(idle)-1]
		s.idle[addr] = idle[:len(idle)-1]
		s.mu.Unlock()
		return c, nil
	}
	s.mu.Unlock()
	return dialShard(ctx, s.dial, addr)
}

// doAt sends cmds on a connection to addr (idle or new), put back after,
// and returns their replies (shardConn.do).
func (s *shardConns) doAt(ctx context.Context, addr string, cmds ...[][]byte) ([][]byte, error) {
	c, err := s.get(ctx, addr)
	if err != nil {
		return nil, err
	}
	defer s.put(c)
	return c.do(ctx, cmds...)
}

// put keeps c for reuse, unless it broke or enough are kept.
func (s *shardConns) put(c *shardConn) {
	if c.broken {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || len(s.idle[c.addr]) >= maxIdleShardConns {
		_ = c.close()
		return
	}
	if s.idle == nil {
		s.idle = map[string][]*shardConn{}
	}
	s.idle[c.addr] = append(s.idle[c.addr], c)
}

// close ends every idle connection; those in use end when put back.
func (s *shardConns) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	var errs []error
	for _, idle := range s.idle {
		for _, c := range idle {
			errs = append(errs, c.close())
		}
	}
	s.idle = nil
	return errors.Join(errs...)
}
