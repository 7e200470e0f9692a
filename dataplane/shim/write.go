package shim

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/distcache/distcache/dataplane/heldkeys"
	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/redisbatch"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
)

// versionClock hands out write versions: v = max(wall clock in ns,
// last + 1). Versions increase strictly within a shim and, because the
// clock starts at the time the shim was created, exceed every version a
// previous run of the shim handed out (as long as the clock does not step
// back across a restart).
type versionClock struct {
	last atomic.Uint64 // the highest version handed out, or the start time
}

// start sets the clock to now; versions handed out are above it.
func (c *versionClock) start(now time.Time) { c.last.Store(uint64(now.UnixNano())) }

// next returns a version above every one returned before.
func (c *versionClock) next(now time.Time) uint64 {
	for {
		last := c.last.Load()
		v := max(uint64(now.UnixNano()), last+1)
		if c.last.CompareAndSwap(last, v) {
			return v
		}
	}
}

// current returns a bound: every version returned so far is ≤ it and every
// later one is > it.
func (c *versionClock) current() uint64 { return c.last.Load() }

// serveWrite runs a PUT or DEL with the two-phase protocol (DistCache
// §4.3) under the key's lock, replies, stores the reply for retransmits,
// releases the lock and then runs phase 2.
func (s *Shim) serveWrite(r *request) {
	dk := r.dedupKey()
	w := writeOutcome{status: wire.StatusInternal}
	unlock, err := s.locks.lock(s.ctx, r.key)
	if err == nil {
		w = s.applyWrite(r)
	}
	// Counted before the reply, so that whoever sees the reply sees it counted.
	s.metrics.requests.Observe(r.op, metrics.StatusResult(w.status), time.Since(r.start))
	reply := s.replyTo(r, w.status, w.version, w.result)
	if w.existed {
		reply.Flags |= wire.FlagHit // DEL_REPLY: the key existed
	}
	s.dedup.complete(dk, reply, time.Now())
	s.send(r.src, &reply)
	// The owners' epochs are read under the key's lock, as the model has
	// it (dataplane/lease/testdata/lease.pml): a later write of the key
	// that releases an owner moves it to an epoch this UPDATE does not
	// carry.
	epochs := s.epochs(w.owners)
	if unlock != nil {
		unlock()
	}
	status, value := w.phase2()
	s.update(r, status, w.version, w.owners, epochs, value)
}

// phase2 is what the write's UPDATE carries: the key's value after a
// write that succeeded, StatusNotFound when it left no value (a DEL's, an
// RMW's that found and set nothing), StatusUncacheable when it left the
// key with an expiry, and a failed write's status. A write a previous run
// of the shim applied ends like a failed one: Redis may hold a later write
// by now.
func (w writeOutcome) phase2() (wire.Status, []byte) {
	switch {
	case w.replayed, w.trimmed: // a trimmed key's copies stay invalid (heldkeys)
		return wire.StatusUnavailable, nil
	case w.status != wire.StatusOK:
		return w.status, nil
	case w.uncacheable:
		return wire.StatusUncacheable, nil
	case !w.valueExists:
		return wire.StatusNotFound, nil
	}
	return wire.StatusOK, w.value
}

// writeOutcome is what applyWrite did: the reply status, the write's
// version, the owners it invalidated, whether a previous run of the shim
// had applied the write already (replayed: acknowledged, not applied
// again), whether a deleted key existed, and an RMW's result (the reply's
// value) and the key's new value for phase 2 (valueExists false: the key
// does not exist).
type writeOutcome struct {
	status            wire.Status
	version           uint64
	owners            []owner
	replayed, existed bool
	// trimmed: the write took its key out of the keys a cache may hold,
	// so phase 2 hands no node its value.
	trimmed       bool
	result, value []byte
	valueExists   bool
	uncacheable   bool // the key exists with an expiry: phase 2 sends no value
}

// applyWrite runs phase 1 and the Redis write of r; the caller holds the
// key's lock.
func (s *Shim) applyWrite(r *request) writeOutcome {
	s.countWrite(r.op)
	if err := s.waitWritable(); err != nil {
		return writeOutcome{status: wire.StatusInternal}
	}
	now := time.Now()
	v := s.clock.next(now)
	owners, copies, released, err := s.invalidate(r.key, v)
	if err != nil {
		s.stats.coherenceFailures.Add(1)
		s.metrics.coherenceFailures.Inc()
		s.log.Warn("write refused: invalidation not acknowledged", "op", r.op, "key", r.key, "version", v, "err", err)
		return writeOutcome{status: wire.StatusCoherence}
	}
	s.metrics.phaseInvalidate.Observe(time.Since(now).Seconds())
	// The coherence work of the copies (DistCache §4.3, the simulator's
	// CoherenceCost): a unit per owner that held a copy, which this write
	// invalidated and will update. Taken on the write's goroutine from the
	// capacity the readers share, ahead of them (serve), so it delays the
	// shim's reads rather than the write.
	s.work.TakeAhead(copies)
	t := time.Now()
	call := s.writeCall(r)
	// trim: no node held a copy, and every one that may hold one
	// acknowledged the INVALIDATE (none released), so the key leaves the
	// set of keys a cache may hold (package heldkeys) and clients may
	// write it directly again; phase 2 then carries no value.
	// A release trims whatever phase 1 found: the copies it invalidated
	// stay invalid, and an owner it released can never serve its copy
	// again (it left the key, or its lease ran out and its next one
	// comes with a flush of this shim's entries: package lease).
	trim := (copies == 0 && !released || r.release) && s.view.Load().cur.directWrites
	if call != nil {
		calls := []*redisbatch.Call{call}
		var mark *redisbatch.Call
		switch {
		case trim:
			mark = &redisbatch.Call{Cmds: [][]any{{"SREM", heldkeys.Key, r.key}}}
			calls = []*redisbatch.Call{mark, call}
		case len(owners) > 0: // phase 2 gives them a value: a cache may hold the key
			mark = &redisbatch.Call{Cmds: [][]any{{"SADD", heldkeys.Key, r.key}}}
			calls = []*redisbatch.Call{mark, call}
		}
		s.redisq.EvalMany(s.ctx, calls)
		if mark != nil && mark.Err != nil && !trim {
			s.redisError("SADD", r.key, mark.Err)
			owners = nil // no update: no copy unless a FETCH, which marks the key, fills one
		}
	}
	s.metrics.phaseWrite.Observe(time.Since(t).Seconds())
	w := s.writeOutcomeOf(r, v, owners, call)
	w.trimmed = trim
	if r.release && w.status == wire.StatusOK {
		w.result = []byte{'0' + byte(oneIf(trim && !w.replayed))}
		s.held.add(r.key, time.Now().Add(s.cfg.ReleaseHold)) // under the key's lock, which FETCHes take
	}
	return w
}

// countWrite counts a write of op.
func (s *Shim) countWrite(op wire.Op) {
	switch op {
	case wire.OpPut:
		s.stats.puts.Add(1)
	case wire.OpDel:
		s.stats.dels.Add(1)
	default:
		s.stats.rmws.Add(1)
	}
}

// writeCall is the Redis call that applies r; nil for an RMW refused
// without one (malformed).
func (s *Shim) writeCall(r *request) *redisbatch.Call {
	if r.op == wire.OpRMW {
		return s.rmwCall(r)
	}
	return s.applyCall(r)
}

// writeOutcomeOf reads the reply of call, r's Redis write of version v
// after phase 1 invalidated owners (call nil: a malformed RMW, refused).
func (s *Shim) writeOutcomeOf(r *request, v uint64, owners []owner, call *redisbatch.Call) writeOutcome {
	var (
		applied, existed bool
		rmw              rmwOutcome
		err              error
	)
	switch {
	case r.op != wire.OpRMW:
		applied, existed, err = applyResult(r, call)
		if r.op == wire.OpPut {
			rmw.value, rmw.exists = r.value, true
		}
	case call == nil:
		rmw = rmwOutcome{status: wire.StatusInternal}
	default:
		rmw, err = rmwResult(r, call)
		applied = rmw.applied
	}
	switch {
	case err == nil && rmw.status != wire.StatusOK:
		// The RMW does not apply (not an integer, too large): nothing
		// written, and phase 2 leaves the invalidated copies invalid.
		return writeOutcome{status: rmw.status, version: v, owners: owners}
	case err != nil:
		s.redisError(r.op.String(), r.key, err)
		return writeOutcome{status: wire.StatusUnavailable, version: v, owners: owners}
	case !applied:
		// A previous run of the shim applied it and died before its reply
		// reached the client: acknowledge it, and end phase 2 without a
		// value (Redis may hold a later write by now).
		s.stats.alreadyApplied.Add(1)
		s.metrics.alreadyApplied.Inc()
		s.log.Info("write already applied by a previous run of the shim; acknowledged again", "op", r.op, "key", r.key, "src", r.src)
		return writeOutcome{status: wire.StatusOK, version: v, owners: owners, replayed: true, existed: existed, result: rmw.result}
	}
	return writeOutcome{status: wire.StatusOK, version: v, owners: owners, existed: existed,
		result: rmw.result, value: rmw.value, valueExists: rmw.exists, uncacheable: rmw.uncacheable}
}

// waitWritable waits until the shim may start phase 1 (mapView.writesFrom):
// a node that cached keys under a map older than the shim's first cannot
// serve them any more. It fails only when the shim closes.
func (s *Shim) waitWritable() error {
	d := time.Until(s.view.Load().writesFrom)
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-s.ctx.Done():
		return fmt.Errorf("cannot write: %w", s.ctx.Err())
	}
}

// update is phase 2 of write r of version v, which ended with status: an
// UPDATE to the owners phase 1 invalidated, bounded by UpdateTimeout. It
// tells the nodes the write is over (so they coalesce misses of the key
// again) and, for a write that left a value (StatusOK,
// writeOutcome.phase2), carries it, which a node applies only if its copy
// still has version v. StatusNotFound answers the readers parked on the
// write "missing"; any other status leaves the copies invalid and sends
// those readers to storage. Failures are counted, not retried: an invalid
// copy is a miss, never a stale read.
//
// Nothing waits for phase 2: the UPDATEs leave as one batch
// (transport.Endpoint.CallManyFunc) and the reader that receives the last
// acknowledgement counts them, so a write costs no goroutine or wake-up
// after its reply. value must not change afterwards (r's own, or a
// Redis reply's).
func (s *Shim) update(r *request, status wire.Status, v uint64, owners []owner, epochs []uint64, value []byte) {
	if len(owners) == 0 {
		return
	}
	start := time.Now()
	mv := s.mapVersion()
	key := []byte(r.key)
	msgs := make([]wire.Message, len(owners))
	reqs := make([]transport.Request, len(owners))
	for i, o := range owners {
		msgs[i] = wire.Message{Header: wire.Header{Op: wire.OpUpdate, Status: status, ValueVersion: v, MapVersion: mv}, Key: key, Value: value}
		if epochs != nil && epochs[i] != 0 {
			msgs[i].SetEpoch(epochs[i])
		}
		reqs[i] = transport.Request{Dst: o.addr, Msg: &msgs[i]}
	}
	s.stats.updatesSent.Add(uint64(len(owners)))
	s.ep.CallManyFunc(start.Add(s.cfg.UpdateTimeout), reqs, func(out []transport.Reply) {
		for i, rep := range out {
			if err := replyError(rep, owners[i], &msgs[i]); err != nil {
				s.stats.updateFailures.Add(1)
				s.metrics.updatesFail.Inc()
				s.log.Debug("update not acknowledged", "key", r.key, "version", v, "owner", owners[i].name, "addr", owners[i].addr, "err", err)
				continue
			}
			s.metrics.updatesOK.Inc()
		}
		s.metrics.phaseUpdate.Observe(time.Since(start).Seconds())
	})
}

// replyError is why the reply r to m, sent to o, is not an
// acknowledgement with StatusOK; nil when it is.
func replyError(r transport.Reply, o owner, m *wire.Message) error {
	switch {
	case r.Err != nil:
		return r.Err
	case r.Msg.Status != wire.StatusOK:
		return fmt.Errorf("cannot %s %q at %s: status %s", m.Op, m.Key, o.addr, r.Msg.Status)
	}
	return nil
}
