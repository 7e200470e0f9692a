package shim

import (
	"time"

	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/redisbatch"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
)

// A receive batch's writes are served together when they need no phase 1,
// as its GETs are (readbatch.go): a write of a key that no cache node may
// hold (holders.go) has nobody to invalidate or update, so the protocol
// of DistCache §4.3 reduces to the Redis write under the key's lock. The
// writes of one batch then take their locks, run their scripts in one
// Redis round trip and send their replies in one SendMany, on one
// goroutine, instead of a goroutine, a round trip and a send each. A write
// whose key's lock is taken, or that has owners to invalidate, is served
// alone (serveWrite), as before.

// batchedWrite is a write of a batch: its request, version, key lock and
// Redis command.
type batchedWrite struct {
	r      *request
	v      uint64
	unlock func()
	call   *redisbatch.Call // nil: a malformed RMW, refused without one, or a first PUT
	joint  joint            // which of the batch's joint calls applies it, if one does
}

// joint names the calls that apply several writes of a batch at once.
type joint int

const (
	ownCall   joint = iota
	firstPuts       // the first datagrams of PUTs (firstPutsCall)
	rmws            // read-modify-writes (joinRMWs)
)

// serveWriteBatch serves writes together (see above). Each takes its key's
// lock without waiting; with the lock, the owners of its key are those of
// the current map, and the directory decides under the lock, as phase 1
// would, that none of them may hold a copy. Writes that fail either test
// are served alone, before the others are applied: they are concurrent
// with the batch, so either order is one their clients may see.
func (s *Shim) serveWriteBatch(ws []*request) {
	if time.Now().Before(s.view.Load().writesFrom) {
		for _, r := range ws {
			s.goServe(r) // waits in waitWritable
		}
		return
	}
	batch := make([]batchedWrite, 0, len(ws))
	for _, r := range ws {
		unlock, ok := s.locks.tryLock(r.key)
		if !ok {
			s.goServe(r)
			continue
		}
		now := time.Now()
		if !s.noneMayHold(r.key, s.owners(s.view.Load(), r.key, now)) {
			unlock()
			s.goServe(r)
			continue
		}
		s.work.TakeAhead(1)
		s.countWrite(r.op)
		w := batchedWrite{r: r, v: s.clock.next(now), unlock: unlock}
		switch {
		case r.op == wire.OpPut && r.first:
			w.joint = firstPuts
		default:
			w.call = s.writeCall(r)
			if r.op == wire.OpRMW && w.call != nil {
				w.joint = rmws
			}
		}
		batch = append(batch, w)
	}
	if len(batch) > 0 {
		s.applyBatch(batch)
	}
}

// applyBatch runs batch's Redis writes in one round trip, the first PUTs
// among them in one transaction, replies to all of them in one SendMany
// and releases their locks and tokens. None has a phase 2: no owner was
// invalidated.
func (s *Shim) applyBatch(batch []batchedWrite) {
	s.stats.writeBatches.Add(1)
	s.stats.batchedWrites.Add(uint64(len(batch)))
	calls := make([]*redisbatch.Call, 0, len(batch))
	var (
		firsts []*request
		rs     []*redisbatch.Call
	)
	for _, w := range batch {
		switch w.joint {
		case firstPuts:
			firsts = append(firsts, w.r)
		case rmws:
			rs = append(rs, w.call)
		default:
			if w.call != nil {
				calls = append(calls, w.call)
			}
		}
	}
	var putsCall, rmwsCall *redisbatch.Call
	if len(firsts) > 0 {
		putsCall = s.firstPutsCall(firsts)
		calls = append(calls, putsCall)
	}
	if len(rs) > 0 {
		rmwsCall = joinRMWs(rs)
		calls = append(calls, rmwsCall)
	}
	t := time.Now()
	s.redisq.EvalMany(s.ctx, calls)
	took := time.Since(t).Seconds()
	replies := make([]transport.Request, len(batch))
	msgs := make([]wire.Message, len(batch))
	done := make([]dedupKey, len(batch))
	now := time.Now()
	var rmwReplied []*redisbatch.Call
	if rmwsCall != nil {
		rmwReplied = rmwReplies(rmwsCall, len(rs))
	}
	for i, w := range batch {
		call := w.call
		switch w.joint {
		case firstPuts:
			call = putsCall
		case rmws:
			call, rmwReplied = rmwReplied[0], rmwReplied[1:]
		}
		out := s.writeOutcomeOf(w.r, w.v, nil, call)
		s.metrics.phaseWrite.Observe(took)
		s.metrics.requests.Observe(w.r.op, metrics.StatusResult(out.status), now.Sub(w.r.start))
		msgs[i] = s.replyTo(w.r, out.status, out.version, out.result)
		if out.existed {
			msgs[i].Flags |= wire.FlagHit // DEL_REPLY: the key existed
		}
		done[i] = w.r.dedupKey()
		replies[i] = transport.Request{Dst: w.r.src, Msg: &msgs[i]}
	}
	s.dedup.completeMany(done, msgs, now)
	if err := s.ep.SendMany(replies); err != nil {
		s.log.Debug("cannot send replies", "replies", len(replies), "err", err)
	}
	for _, w := range batch {
		w.unlock()
		<-s.sem
	}
}
