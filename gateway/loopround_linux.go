//go:build linux

package gateway

import (
	"context"
	"strings"
	"time"

	"github.com/distcache/distcache/client"
)

// round is the GET pipelines, or the SET pipelines, of one loop pass,
// sent to the cluster at once (asyncStore).
type round struct {
	kind     roundKind
	conns    []*loopConn
	keys     []string // every pipeline's keys, in order
	values   [][]byte // the SETs' values
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
	var rounds [roundSets + 1]*round
	taken := 0
	for _, c := range l.waiting {
		if !s.admit.tryAcquire(len(c.cmds)) {
			break
		}
		r := rounds[c.kind]
		if r == nil {
			r = &round{kind: c.kind, start: time.Now()}
			rounds[c.kind] = r
		}
		r.admitted += len(c.cmds)
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
			size += len(cmd.Args[1])
		}
	}
	var b strings.Builder
	b.Grow(size)
	for _, c := range r.conns {
		for _, cmd := range c.cmds {
			b.Write(cmd.Args[1])
		}
	}
	all := b.String()
	r.keys = make([]string, 0, r.admitted)
	for _, c := range r.conns {
		for _, cmd := range c.cmds {
			n := len(cmd.Args[1])
			r.keys = append(r.keys, all[:n])
			all = all[n:]
			if r.kind == roundSets {
				r.values = append(r.values, cmd.Args[2])
			}
		}
	}
	r.errs = make([]error, len(r.keys))
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.OpTimeout)
	r.cancel = cancel
	done := func() { l.post(completion{round: r}) }
	if r.kind == roundSets {
		l.store.PutManyFunc(ctx, r.keys, r.values, r.errs, done)
		return
	}
	r.res = make([]client.Result, len(r.keys))
	l.store.GetManyFunc(ctx, r.keys, r.res, r.errs, done)
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
		for range c.cmds {
			from := len(c.out)
			switch {
			case r.kind == roundGets:
				c.out = appendValue(c.out, r.res[k].Value, r.errs[k], resp3)
				s.observe(getCommand, c.out[from:], took)
			case r.errs[k] != nil:
				c.out = appendError(c.out, errorReply(r.errs[k], true))
				s.observe(setCommand, c.out[from:], took)
			default:
				c.out = appendOK(c.out)
				s.observe(setCommand, c.out[from:], took)
			}
			k++
		}
		c.cmds, c.kind = nil, notARound
		l.ended(c)
	}
}
