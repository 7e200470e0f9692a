//go:build linux

package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"strconv"
	"time"

	"github.com/distcache/distcache/dataplane/heldkeys"
	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/redispipe"
	"github.com/distcache/distcache/dataplane/wire"
)

// Pipes are an event loop's own connections to the shards' Redis
// (package redispipe), for a gateway loop that runs to completion: its
// direct reads and writes (storage.go, directwrite.go) are appended to
// the connection of the key's shard and written when the loop flushes,
// and their replies are parsed when the loop finds a socket readable,
// on the loop's thread. No goroutine, lock or channel per round, as a
// proxy's server connections. Reads and writes that find a connection
// down, or whose connection breaks, take the client's other paths.
// Every method must be called from the loop that owns the Pipes.
type Pipes struct {
	c        *Client
	register func(old, fd int) error
	// post runs a function on the loop's thread (soon, not inside the
	// call): how reads that a node left to the client, whose replies may
	// arrive on another goroutine, reach the pipes.
	post   func(func())
	byAddr map[string]*redispipe.Conn
	byFD   map[int]*redispipe.Conn
	// shards are the connections by global shard index under view, nil
	// when the view has no direct reads.
	view   *view
	shards []*redispipe.Conn
	dirty  []*redispipe.Conn // with commands to write
}

// PipeClientName is the name of the pipes' connections in Redis's CLIENT
// LIST.
const PipeClientName = "distcache-loop"

// NewPipes returns an event loop's Redis connections; register adds a
// new socket fd to the loop's epoll (edge-triggered, readable and
// writable) and removes old (-1: none); post runs a function on the
// loop's thread, from any goroutine. The loop calls Poll for their
// sockets and Flush at the end of every pass.
func (c *Client) NewPipes(register func(old, fd int) error, post func(func())) *Pipes {
	return &Pipes{c: c, register: register, post: post, byAddr: map[string]*redispipe.Conn{}, byFD: map[int]*redispipe.Conn{}}
}

var (
	// nameConn names the pipes' connections in Redis's CLIENT LIST.
	nameConn = [][]byte{[]byte("CLIENT"), []byte("SETNAME"), []byte(PipeClientName)}
	loadSet  = [][]byte{[]byte("SCRIPT"), []byte("LOAD"), []byte(heldkeys.SetSource)}
	loadIncr = [][]byte{[]byte("SCRIPT"), []byte("LOAD"), []byte(heldkeys.IncrBySource)}
)

// conns returns the connections by shard index under v, nil when v has
// no direct reads. They log in as Config.StorageLogin says: AUTH first
// with a password, TLS verified for each server's own name (a host name
// resolved at each dial).
func (p *Pipes) conns(v *view) []*redispipe.Conn {
	if v == p.view {
		return p.shards
	}
	p.view, p.shards = v, nil
	if v.storage == nil {
		return nil
	}
	var out []*redispipe.Conn
	for _, r := range v.p.Map().Storage.Racks {
		for _, sh := range r.Shards {
			if sh.Redis == "" {
				return nil
			}
			conn := p.byAddr[sh.Redis]
			if conn == nil {
				conn = p.dial(sh.Redis)
			}
			out = append(out, conn)
		}
	}
	p.shards = out
	return out
}

// dial returns the pipes' connection to addr, whose sockets register with
// the loop and are found by Poll.
func (p *Pipes) dial(addr string) *redispipe.Conn {
	opts := []redispipe.Option{redispipe.WithPrelude(nameConn, loadSet, loadIncr, loadSetMany, loadCommand)}
	login := p.c.cfg.StorageLogin
	if login.PasswordFile != "" {
		opts = append(opts, redispipe.WithLogin(login.AuthCommand))
	}
	if login.TLS {
		opts = append(opts, redispipe.WithTLS(func() (*tls.Config, error) { return login.TLSConfigFor(addr) }))
	}
	var conn *redispipe.Conn
	conn = redispipe.New(addr, func(old, fd int) error {
		delete(p.byFD, old)
		if err := p.register(old, fd); err != nil {
			return fmt.Errorf("cannot watch a redis connection: %w", err)
		}
		if fd >= 0 {
			p.byFD[fd] = conn
		}
		return nil
	}, p.post, opts...)
	p.byAddr[addr] = conn
	return conn
}

// Poll serves the socket fd if it is one of the pipes' and reports
// whether it was.
func (p *Pipes) Poll(fd int) bool {
	conn := p.byFD[fd]
	if conn == nil {
		return false
	}
	conn.Poll()
	return true
}

// Flush writes every connection's queued commands.
func (p *Pipes) Flush() {
	for _, conn := range p.dirty {
		conn.Flush()
	}
	clear(p.dirty)
	p.dirty = p.dirty[:0]
}

// pipeStall is how long a pipe's Redis may answer nothing while commands
// wait: the bound the shims put on a Redis reply (shim's
// DefaultRedisIOTimeout). A pipe carries any command of one key, and one
// slow command (a large DEL, an LRANGE of everything) stalls Redis for
// all; a GET's attempt timeout would cut those short.
const pipeStall = time.Second

// Expire fails the connections on which commands have waited with no
// answer for longer than pipeStall: their reads take the client's other
// paths, their writes end with an unknown outcome. The loop calls it on
// its tick.
func (p *Pipes) Expire(now time.Time) {
	for _, conn := range p.byAddr {
		conn.Expire(now, pipeStall)
	}
}

// Close closes the connections; commands in flight fail.
func (p *Pipes) Close() {
	for _, conn := range p.byAddr {
		conn.Close()
	}
}

// do queues a command on conn and reports whether it could.
func (p *Pipes) do(conn *redispipe.Conn, w redispipe.Waiter, tag int, args ...[]byte) bool {
	if !conn.Do(w, tag, args...) {
		return false
	}
	if len(p.dirty) == 0 || p.dirty[len(p.dirty)-1] != conn {
		p.dirty = append(p.dirty, conn) // a connection twice is flushed twice: harmless
	}
	return true
}

var getCmd = []byte("GET")

// GetManyFunc is Client.GetManyFunc with the keys that are not warm read
// on the pipes.
func (p *Pipes) GetManyFunc(ctx context.Context, keys []string, res []Result, errs []error, done func()) {
	read := func(v *view, cold []int, kbs [][]byte, start time.Time, done func()) {
		conns := p.conns(v)
		r := &pipedReads{c: p.c, ctx: ctx, v: v, keys: keys, kbs: kbs, res: res, errs: errs, start: start, done: done}
		for _, i := range cold {
			if conns == nil || !p.do(conns[v.p.ShardIndex(keys[i])], r, i, getCmd, kbs[i]) {
				r.other = append(r.other, i)
				continue
			}
			r.left++
		}
		r.finish()
	}
	missed := func(v *view, idx []int, kbs [][]byte, start time.Time, done func()) {
		p.post(func() { read(v, idx, kbs, start, done) })
	}
	p.c.getManyFunc(ctx, keys, res, errs, done, read, missed)
}

// pipedReads are a round's reads on the pipes.
type pipedReads struct {
	c     *Client
	ctx   context.Context
	v     *view
	keys  []string
	kbs   [][]byte
	res   []Result
	errs  []error
	start time.Time
	done  func()
	left  int   // replies still to come
	other []int // keys read on the client's other paths
}

// RedisReply settles keys[i]'s read.
func (r *pipedReads) RedisReply(i int, rep redispipe.Reply) {
	c := r.c
	switch {
	case rep.Err != nil || rep.Kind != '$':
		c.stats.storageFailures.Add(1)
		r.other = append(r.other, i)
	default:
		var value []byte
		if !rep.Nil {
			value = append([]byte(nil), rep.Value...)
		}
		res, label, err := c.storageResult(value, !rep.Nil)
		r.res[i], r.errs[i] = c.settle(r.keys[i], time.Since(r.start), res, label, err)
	}
	r.left--
	r.finish()
}

// finish calls done once every reply is in, after the reads that took
// another path, on a goroutine of their own.
func (r *pipedReads) finish() {
	if r.left > 0 {
		return
	}
	if len(r.other) == 0 {
		r.done()
		return
	}
	go func() {
		r.c.readStorageMany(r.ctx, r.v, r.keys, r.kbs, r.other, r.start, r.res, r.errs)
		r.done()
	}()
}

var (
	evalsha = []byte("EVALSHA")
	two     = []byte("2")
	held    = []byte(heldkeys.Key)
	setSHA  = []byte(heldkeys.Set.Hash())
	incrSHA = []byte(heldkeys.IncrBy.Hash())
)

// PutManyFunc is Client.PutManyFunc with the direct writes on the pipes.
func (p *Pipes) PutManyFunc(ctx context.Context, keys []string, values [][]byte, errs []error, done func()) {
	c := p.c
	v := c.view.Load()
	conns := p.conns(v)
	if !c.writesDirect(v) || conns == nil {
		c.PutManyFunc(ctx, keys, values, errs, done)
		return
	}
	c.stats.puts.Add(uint64(len(keys)))
	w := &pipedWrites{c: c, ctx: ctx, op: wire.OpPut, verb: "put", keys: keys, values: values, errs: errs, start: time.Now(), done: done}
	kbs := keyBytes(keys)
	byShard := make([][]int, len(conns))
	for i, key := range keys {
		if label, err := checkWrite(key, values[i]); err != nil {
			errs[i] = c.wrote(wire.OpPut, "put", key, w.start, label, err)
			continue
		}
		sh := v.p.ShardIndex(key)
		byShard[sh] = append(byShard[sh], i)
	}
	for sh, idx := range byShard {
		if len(idx) == 0 {
			continue
		}
		if !p.putShard(conns[sh], w, idx, kbs) {
			w.shim = append(w.shim, idx...)
			continue
		}
		w.left += len(idx)
	}
	w.finish()
}

// IncrByManyFunc is Client.IncrByManyFunc with the direct increments on
// the pipes.
func (p *Pipes) IncrByManyFunc(ctx context.Context, keys []string, deltas []int64, results []int64, errs []error, done func()) {
	c := p.c
	v := c.view.Load()
	conns := p.conns(v)
	if !c.writesDirect(v) || conns == nil {
		c.IncrByManyFunc(ctx, keys, deltas, results, errs, done)
		return
	}
	w := &pipedWrites{c: c, ctx: ctx, op: wire.OpRMW, verb: wire.RMWIncrBy.String(), keys: keys, errs: errs,
		start: time.Now(), done: done, results: results, values: make([][]byte, len(keys))}
	kbs := keyBytes(keys)
	for i, key := range keys {
		c.stats.rmws.Add(1)
		w.values[i] = wire.AppendRMW(nil, wire.RMWIncrBy, wire.IncrByArg(deltas[i]))
		if err := checkKey(key); err != nil {
			errs[i] = c.wrote(wire.OpRMW, w.verb, key, w.start, metrics.StatusResult(wire.StatusTooLarge), err)
			continue
		}
		if !p.do(conns[v.p.ShardIndex(key)], w, i, evalsha, incrSHA, two, kbs[i], held, strconv.AppendInt(nil, deltas[i], 10)) {
			w.shim = append(w.shim, i)
			continue
		}
		w.left++
	}
	w.finish()
}

// pipedWrites are a round's direct writes on the pipes.
type pipedWrites struct {
	c       *Client
	ctx     context.Context
	op      wire.Op
	verb    string
	keys    []string
	values  [][]byte // PUT values, or the shim's RMW arguments
	results []int64  // INCR results (once)
	errs    []error
	start   time.Time
	done    func()
	left    int   // replies still to come
	shim    []int // keys the shims write
}

// errRedisReply is Redis's error reply to a direct write.
type errRedisReply string

func (e errRedisReply) Error() string { return string(e) }

// RedisReply settles keys[i]'s write, or leaves it to its shim.
func (w *pipedWrites) RedisReply(i int, rep redispipe.Reply) {
	out, failed, err := scriptFailed(rep)
	switch {
	case failed:
	case rep.Kind == '$' && rep.Nil:
		out = directHeld
	case rep.Kind == ':' && w.results != nil:
		w.results[i] = rep.Int
	case rep.Kind != '+':
		out, err = directRefused, fmt.Errorf("unexpected reply %q", rep.Kind)
	}
	w.settle(i, out, err)
}

// scriptFailed classifies a reply to a direct write's script that is no
// answer of the script: a broken connection, a script Redis does not have
// (not run: the shims write the keys) or Redis's error. failed is false
// for any other reply, and out then directApplied.
func scriptFailed(rep redispipe.Reply) (out directOutcome, failed bool, err error) {
	switch {
	case rep.Err != nil:
		return directBroken, true, rep.Err
	case rep.Kind == '-' && bytes.HasPrefix(rep.Value, []byte("NOSCRIPT")):
		return directHeld, true, nil
	case rep.Kind == '-':
		return directRefused, true, errRedisReply(rep.Value)
	}
	return directApplied, false, nil
}

// settle accounts for keys[i]'s write, which ended with out (and err), or
// leaves it to its shim.
func (w *pipedWrites) settle(i int, out directOutcome, err error) {
	shim, werr := w.c.settleDirect(w.op, w.verb, w.keys[i], w.start, out, err)
	if shim {
		w.shim = append(w.shim, i)
	} else {
		w.errs[i] = werr
	}
	w.left--
	w.finish()
}

// finish calls done once every reply is in, after the shims wrote the
// keys left to them.
func (w *pipedWrites) finish() {
	if w.left > 0 {
		return
	}
	if w.results == nil {
		w.c.writeRest(w.ctx, w.op, w.verb, w.keys, w.values, nil, w.errs, w.shim, w.done)
		return
	}
	replies := make([][]byte, len(w.keys))
	w.c.writeRest(w.ctx, w.op, w.verb, w.keys, w.values, replies, w.errs, w.shim, func() {
		for _, i := range w.shim {
			if w.errs[i] == nil {
				w.results[i], w.errs[i] = shimInt(wire.RMWIncrBy, w.keys[i], replies[i])
			}
		}
		w.done()
	})
}
