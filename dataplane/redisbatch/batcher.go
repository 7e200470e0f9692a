// Package redisbatch reads keys from one Redis server for many concurrent
// callers in as few round trips as it can. A storage shim reads its misses
// through it, and so do clients that read misses from Redis directly
// (spec.dataPlane.directReads).
//
// It is flat combining, as the transport's sends: a read that finds
// another read's round trip under way queues its key, and the goroutine
// whose round trip ends sends everything queued meanwhile as one pipeline,
// again until nothing is queued. Under load the GETs of many distinct keys
// cost one write and one read on a Redis connection instead of one of each
// per key; a read alone is one GET at once. There is no timer and no
// goroutine of its own.
package redisbatch

import (
	"context"
	"errors"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Batcher pipelines the GETs of concurrent callers on one connection.
type Batcher struct {
	rdb *redis.Client
	// conn is a connection of the batcher's own, taken from rdb's pool on
	// first use and kept: a round trip on it costs no pool checkout, whose
	// health check is a system call of its own per command. Only the
	// goroutine running round trips (busy) uses it. A network error closes
	// it; the round trip runs again once on a new one.
	conn *redis.Conn

	mu    sync.Mutex // guards queue, spare and busy
	queue []*Read    // reads waiting for the next round trip
	spare []*Read    // the other queue's array, for reuse
	busy  bool       // a goroutine is running round trips
}

// New returns a batcher reading through rdb, on a connection of its own.
func New(rdb *redis.Client) *Batcher { return &Batcher{rdb: rdb} }

// Close closes the batcher's connection; rdb stays open.
func (b *Batcher) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.busy || b.conn == nil {
		return nil // a round trip under way owns it; rdb's Close ends it
	}
	err := b.conn.Close()
	b.conn = nil
	return err
}

// Read is one key's read and, once done is closed, its result: Value, or
// Err (redis.Nil for a key that does not exist). The reads of one GetMany
// share done, closed by the last of them (last): they are queued
// together, so they are read in one round trip.
type Read struct {
	Key   string
	Value []byte
	Err   error
	done  chan struct{}
	last  bool
	// eval, when set, makes this a script's run (EvalMany) instead of a
	// GET.
	eval *Call
}

// Call is one script's run for EvalMany, Script with Keys and Args, or
// plain commands, Cmds; once EvalMany returns, its Result or Err.
type Call struct {
	Script *redis.Script
	Keys   []string
	Args   []any
	// Cmds, when set instead of Script, are commands sent one after the
	// other in the round trip; Result is their replies, Err the first
	// command's error (Errs has every command's).
	Cmds [][]any
	// Once keeps the call from being sent again after a broken
	// connection, for a command that must not run twice (an INCR): its
	// Err is then the connection's, and whether Redis ran it is unknown.
	Once   bool
	Result any
	Err    error
	Errs   []error
	sent   []*redis.Cmd // Cmds as queued in the pipeline
}

// complete records a read's result and, for the last read of its
// getMany, signals them all done.
func (p *Read) complete(v []byte, err error) {
	p.Value, p.Err = v, err
	if p.last {
		close(p.done)
	}
}

// Eval runs script with keys and args (EVALSHA, and EVAL when Redis does
// not know the script) in the round trip of the commands queued with it,
// and returns its result. Commands of one round trip run in the order
// they were queued; a caller that must order two commands waits for the
// first before it queues the second. After a broken connection the round
// trip runs again on a new one, so the script must be safe to run twice.
func (b *Batcher) Eval(ctx context.Context, script *redis.Script, keys []string, args ...any) (any, error) {
	c := &Call{Script: script, Keys: keys, Args: args}
	b.EvalMany(ctx, []*Call{c})
	return c.Result, c.Err
}

// EvalMany runs calls, in their order, in the round trip of the commands
// queued with them, and sets each one's Result or Err, as Eval does.
// Commands are sent again after a broken connection, as a script is.
func (b *Batcher) EvalMany(ctx context.Context, calls []*Call) {
	if len(calls) == 0 {
		return
	}
	ps := newReads(len(calls), func(r *Read, i int) { r.eval = calls[i] })
	b.run(ctx, ps)
	for i, c := range calls {
		c.Err = ps[i].Err
	}
}

// newReads returns n reads that share one done channel, the last one
// closing it, each set up by set.
func newReads(n int, set func(r *Read, i int)) []*Read {
	ps, reads := make([]*Read, n), make([]Read, n)
	done := make(chan struct{})
	for i := range reads {
		reads[i].done = done
		set(&reads[i], i)
		ps[i] = &reads[i]
	}
	reads[n-1].last = true
	return ps
}

// Get reads key: its value, or redis.Nil when it does not exist.
func (b *Batcher) Get(ctx context.Context, key string) ([]byte, error) {
	p := b.GetMany(ctx, []string{key})[0]
	return p.Value, p.Err
}

// GetMany reads keys, in the round trip of the reads queued with them,
// and returns a completed read per key.
func (b *Batcher) GetMany(ctx context.Context, keys []string) []*Read {
	if len(keys) == 0 {
		return nil
	}
	ps := newReads(len(keys), func(r *Read, i int) { r.Key = keys[i] })
	b.run(ctx, ps)
	return ps
}

// run queues ps, whose last signals done, and returns once they are
// complete: it runs the round trips itself unless another caller is.
func (b *Batcher) run(ctx context.Context, ps []*Read) {
	done := ps[len(ps)-1].done
	b.mu.Lock()
	b.queue = append(b.queue, ps...)
	if b.busy {
		b.mu.Unlock()
		<-done
		return
	}
	b.busy = true
	for {
		batch := b.queue
		b.queue, b.spare = b.spare[:0], nil
		b.mu.Unlock()
		b.read(ctx, batch)
		clear(batch)
		b.mu.Lock()
		b.spare = batch[:0]
		if len(b.queue) == 0 { // ps were in the first batch
			b.busy = false
			b.mu.Unlock()
			return
		}
	}
}

// read runs one round trip for batch and completes each read.
func (b *Batcher) read(ctx context.Context, batch []*Read) {
	cmds := b.roundTrip(ctx, batch)
	if connBroken(cmds) && ctx.Err() == nil {
		cmds = b.again(ctx, batch, cmds) // on a new connection
	}
	for i, p := range batch {
		if e := p.eval; e != nil {
			cmd := cmds[i].(*redis.Cmd)
			if e.Cmds != nil {
				e.replies()
				p.complete(nil, e.Err)
				continue
			}
			if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") && b.conn != nil {
				cmd = e.Script.Run(ctx, b.conn, e.Keys, e.Args...) // EVAL loads it
			}
			e.Result = cmd.Val()
			p.complete(nil, cmd.Err())
			continue
		}
		p.complete(cmds[i].(*redis.StringCmd).Bytes())
	}
}

// again runs the round trip of batch, whose first run returned cmds on a
// connection that broke, once more, except for the calls that run Once:
// those keep their first run's commands and errors.
func (b *Batcher) again(ctx context.Context, batch []*Read, cmds []redis.Cmder) []redis.Cmder {
	var rerun []*Read
	var at []int // batch index of each of rerun
	for i, p := range batch {
		if p.eval == nil || !p.eval.Once {
			rerun, at = append(rerun, p), append(at, i)
		}
	}
	if len(rerun) == 0 {
		return cmds
	}
	for j, c := range b.roundTrip(ctx, rerun) {
		cmds[at[j]] = c
	}
	return cmds
}

// roundTrip sends a GET (or EVALSHA) per entry of batch on the batcher's
// connection, in one pipeline, and returns the commands with their
// replies. A network error closes the connection.
func (b *Batcher) roundTrip(ctx context.Context, batch []*Read) []redis.Cmder {
	if b.conn == nil {
		b.conn = b.rdb.Conn()
	}
	cmds := make([]redis.Cmder, len(batch))
	if len(batch) == 1 && batch[0].eval == nil {
		cmds[0] = b.conn.Get(ctx, batch[0].Key)
	} else {
		pipe := b.conn.Pipeline()
		for i, p := range batch {
			switch e := p.eval; {
			case e != nil && e.Cmds != nil:
				e.sent = e.sent[:0]
				for _, c := range e.Cmds {
					e.sent = append(e.sent, pipe.Do(ctx, c...))
				}
				cmds[i] = e.sent[0]
			case e != nil:
				cmds[i] = pipe.EvalSha(ctx, e.Script.Hash(), e.Keys, e.Args...)
			default:
				cmds[i] = pipe.Get(ctx, p.Key)
			}
		}
		_, _ = pipe.Exec(ctx) // each command carries its own error
	}
	if connBroken(cmds) {
		_ = b.conn.Close()
		b.conn = nil
	}
	return cmds
}

// replies sets the Result, Err and Errs of a call of Cmds from its sent
// commands.
func (c *Call) replies() {
	res := make([]any, len(c.sent))
	c.Errs = make([]error, len(c.sent))
	for i, cmd := range c.sent {
		res[i], c.Errs[i] = cmd.Val(), cmd.Err()
	}
	c.Result, c.Err = res, c.Errs[0]
}

// connBroken says whether a command failed for its connection rather than
// with Redis's answer: not "nil", not an error reply.
func connBroken(cmds []redis.Cmder) bool {
	for _, c := range cmds {
		err := c.Err()
		var reply redis.Error
		if err != nil && !errors.Is(err, redis.Nil) && !errors.As(err, &reply) {
			return true
		}
	}
	return false
}
