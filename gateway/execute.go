package gateway

import (
	"context"
	"hash/maphash"
	"sync"
	"time"

	"github.com/tidwall/redcon"
)

// execute runs a connection's pipeline and returns each command's reply,
// in order. Commands run concurrently in batches; a batch ends before a
// command that conflicts with one in it (it writes a key the batch reads
// or writes, or reads a key the batch writes) and around a command that
// runs alone, so every client sees its commands take effect in the order
// it sent them.
func (s *Server) execute(sess *session, cmds []redcon.Command) [][]byte {
	p := &sess.pipe
	out := resized(p.out, len(cmds))
	p.out = out
	if len(cmds) == 1 {
		out[0] = s.run(sess, cmds[0].Args)
		return out
	}
	b := &p.batch
	for i, cmd := range cmds {
		c := lookup(cmd.Args[0])
		if c == nil || c.alone || sess.queuing() {
			s.runBatch(sess, cmds, b, out)
			out[i] = s.run(sess, cmd.Args)
			continue
		}
		keys := c.keys(cmd.Args)
		if b.conflicts(keys, c.write) {
			s.runBatch(sess, cmds, b, out)
		}
		b.add(i, keys, c.write)
	}
	s.runBatch(sess, cmds, b, out)
	return out
}

// resized returns s with n zero elements, reusing its array when it is
// large enough.
func resized[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// batch is a set of pipelined commands that may run concurrently. It
// knows the keys its commands read and write by a hash of each (keyHash):
// two keys that share one only end a batch early, which is always safe.
type batch struct {
	idx           []int
	reads, writes map[uint64]struct{}
}

// batchSeed seeds keyHash.
var batchSeed = maphash.MakeSeed()

// keyHash is a key's hash in a batch's sets: 64 bits, so that a set holds
// no copy of the key.
func keyHash(k []byte) uint64 { return maphash.Bytes(batchSeed, k) }

func (b *batch) conflicts(keys [][]byte, write bool) bool {
	for _, k := range keys {
		h := keyHash(k)
		if _, ok := b.writes[h]; ok {
			return true
		}
		if _, ok := b.reads[h]; ok && write {
			return true
		}
	}
	return false
}

func (b *batch) add(i int, keys [][]byte, write bool) {
	b.idx = append(b.idx, i)
	set := &b.reads
	if write {
		set = &b.writes
	}
	if *set == nil {
		*set = make(map[uint64]struct{})
	}
	for _, k := range keys {
		(*set)[keyHash(k)] = struct{}{}
	}
}

func (b *batch) reset() {
	b.idx = b.idx[:0]
	clear(b.reads)
	clear(b.writes)
}

// runBatch runs b's commands on the server's workers, puts their replies
// into out, and empties b. They start together, so they share one
// deadline: OpTimeout from now, waiting for a worker included.
func (s *Server) runBatch(sess *session, cmds []redcon.Command, b *batch, out [][]byte) {
	defer b.reset()
	switch len(b.idx) {
	case 0:
		return
	case 1:
		out[b.idx[0]] = s.run(sess, cmds[b.idx[0]].Args)
		return
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.OpTimeout)
	defer cancel()
	gets, others := s.splitGets(sess, cmds, b.idx)
	var wg sync.WaitGroup
	for _, i := range others {
		wg.Add(1)
		run := func() {
			defer wg.Done()
			out[i] = s.runUntil(ctx, sess, cmds[i].Args)
		}
		if !s.work.run(ctx, run) { // it waited for a worker since the batch started
			wg.Done()
			reply := appendError(nil, waitingError(ctx))
			s.observe(lookup(cmds[i].Args[0]), reply, time.Since(start))
			out[i] = reply
		}
	}
	s.runGets(ctx, sess, cmds, gets, out)
	wg.Wait()
}

// run runs one command with a deadline of its own and returns its reply.
func (s *Server) run(sess *session, args [][]byte) []byte {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.OpTimeout)
	defer cancel()
	return s.runUntil(ctx, sess, args)
}

// runUntil runs one command until ctx ends and returns its reply.
func (s *Server) runUntil(ctx context.Context, sess *session, args [][]byte) []byte {
	start := time.Now()
	c := lookup(args[0])
	var reply []byte
	switch {
	case sess.queuing() && (c == nil || !txControl[c.name]): // MULTI was admitted
		reply = queue(sess, c, args)
	case c == nil:
		reply = appendError(nil, unknownCommand(args))
	case !c.arityOK(len(args)):
		reply = appendError(nil, wrongArity(args[0]))
	case !s.admitted(sess, c):
		reply = appendError(nil, "NOAUTH Authentication required.")
	case c.blocking:
		reply = c.run(&call{ctx: ctx, srv: s, sess: sess, args: args, resp3: sess.resp3()}, nil)
	case s.admit.acquire(ctx, 1) == 0:
		reply = appendError(nil, waitingError(ctx))
	default:
		reply = c.run(&call{ctx: ctx, srv: s, sess: sess, args: args, resp3: sess.resp3()}, nil)
		s.admit.release(1)
	}
	s.observe(c, reply, time.Since(start))
	return reply
}

// waitingError is the reply to a command whose deadline ended before it
// reached the cluster.
func waitingError(ctx context.Context) string {
	return "ERR DistCache: " + ctx.Err().Error() + " waiting for the cluster"
}

// admitted says whether sess may run c: every command once authenticated
// (or without users), only AUTH, HELLO (to authenticate) and QUIT before.
func (s *Server) admitted(sess *session, c *command) bool {
	if s.cfg.Users == nil {
		return true
	}
	switch c.name {
	case "auth", "hello", "quit":
		return true
	}
	return s.admittedAll(sess)
}

// admittedAll says whether sess may run every command: it authenticated,
// or there are no users.
func (s *Server) admittedAll(sess *session) bool {
	if s.cfg.Users == nil {
		return true
	}
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.user != ""
}
