//go:build linux

package gateway

import (
	"context"
	"strings"
	"time"

	"github.com/tidwall/redcon"

	"github.com/distcache/distcache/client"
)

// round is the read pipelines (GET, MGET), the SET pipelines or the INCR
// pipelines of one loop pass,
// sent to the cluster at once (asyncStore).
type round struct {
	kind     roundKind
	conns    []*loopConn
	keys     []string   // every pipeline's keys, in order
	values   [][]byte   // the SETs' values
	deltas   []int64    // the INCRs' and DECRs' increments
	ints     []int64    // their results
	args     [][][]byte // the commands': each's name and arguments after the key
	replies  [][]byte   // their replies (RESP2)
	res      []client.Result
	errs     []error
	admitted int
	start    time.Time
	cancel   context.CancelFunc
}

// sendRounds admits the waiting pipelines, in order, as far as
// MaxInFlight allows, and sends their GETs as one round and their SETs as
// another.
func (l *eventLoop) sendRounds() {
	s := l.srv
	var rounds [roundCommands + 1]*round
	taken := 0
	for _, c := range l.waiting {
		if !s.admit.tryAcquire(c.keys) {
			break
		}
		r := rounds[c.kind]
		if r == nil {
			r = &round{kind: c.kind, start: time.Now()}
			rounds[c.kind] = r
		}
		r.admitted += c.keys
		r.conns = append(r.conns, c)
		taken++
	}
	clear(l.waiting[:taken])
	l.waiting = l.waiting[:copy(l.waiting, l.waiting[taken:])]
	for _, r := range rounds {
		if r != nil {
			l.send(r)
		}
	}
}

// send sends round r to the cluster; the loop finishes it when done.
func (l *eventLoop) send(r *round) {
	s := l.srv
	size := 0
	for _, c := range r.conns {
		for _, cmd := range c.cmds {
			for _, k := range roundKeys(r.kind, cmd) {
				size += len(k)
			}
		}
	}
	var b strings.Builder
	b.Grow(size)
	for _, c := range r.conns {
		for _, cmd := range c.cmds {
			for _, k := range roundKeys(r.kind, cmd) {
				b.Write(k)
			}
		}
	}
	all := b.String()
	r.keys = make([]string, 0, r.admitted)
	for _, c := range r.conns {
		for _, cmd := range c.cmds {
			for _, k := range roundKeys(r.kind, cmd) {
				r.keys = append(r.keys, all[:len(k)])
				all = all[len(k):]
			}
			switch {
			case r.kind == roundSets:
				r.values = append(r.values, cmd.Args[2])
			case r.kind == roundIncrs && lookup(cmd.Args[0]) == decrCommand:
				r.deltas = append(r.deltas, -1)
			case r.kind == roundIncrs:
				r.deltas = append(r.deltas, 1)
			case r.kind == roundCommands:
				r.args = append(r.args, shimArgs(cmd.Args))
			}
		}
	}
	r.errs = make([]error, len(r.keys))
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.OpTimeout)
	r.cancel = cancel
	done := func() { l.post(completion{round: r}) }
	switch r.kind {
	case roundSets:
		l.store.PutManyFunc(ctx, r.keys, r.values, r.errs, done)
		return
	case roundIncrs:
		r.ints = make([]int64, len(r.keys))
		l.store.IncrByManyFunc(ctx, r.keys, r.deltas, r.ints, r.errs, done)
		return
	case roundCommands:
		r.replies = make([][]byte, len(r.keys))
		l.store.CommandManyFunc(ctx, r.keys, r.args, r.replies, r.errs, done)
		return
	}
	r.res = make([]client.Result, len(r.keys))
	l.store.GetManyFunc(ctx, r.keys, r.res, r.errs, done)
}

// roundKeys are the keys cmd of a round of kind reads or writes: a SET's,
// an INCR's or a GET's key, an MGET's keys.
func roundKeys(kind roundKind, cmd redcon.Command) [][]byte {
	if kind != roundGets {
		return cmd.Args[1:2]
	}
	return cmd.Args[1:]
}

// roundDone queues the replies of a round's pipelines.
func (l *eventLoop) roundDone(r *round) {
	s := l.srv
	r.cancel()
	s.admit.release(r.admitted)
	took := time.Since(r.start)
	k := 0
	for _, c := range r.conns {
		resp3 := c.sess.resp3()
		for _, cmd := range c.cmds {
			from := len(c.out)
			switch {
			case r.kind == roundGets && lookup(cmd.Args[0]) == mgetCommand:
				n := len(cmd.Args) - 1
				c.out = appendMGet(c.out, r.res[k:k+n], r.errs[k:k+n], resp3)
				s.observe(mgetCommand, c.out[from:], took)
				k += n - 1
			case r.kind == roundGets:
				c.out = appendValue(c.out, r.res[k].Value, r.errs[k], resp3)
				s.observe(getCommand, c.out[from:], took)
			case r.kind == roundCommands:
				c.out = appendShimReply(c.out, cmd.Args, r.replies[k], r.errs[k], resp3)
				s.observe(lookup(cmd.Args[0]), c.out[from:], took)
			case r.errs[k] != nil:
				c.out = appendError(c.out, errorReply(r.errs[k], true))
				s.observe(lookup(cmd.Args[0]), c.out[from:], took)
			case r.kind == roundIncrs:
				c.out = appendInt(c.out, r.ints[k])
				s.observe(lookup(cmd.Args[0]), c.out[from:], took)
			default:
				c.out = appendOK(c.out)
				s.observe(setCommand, c.out[from:], took)
			}
			k++
		}
		c.cmds, c.kind, c.keys = nil, notARound, 0
		l.ended(c)
	}
}
