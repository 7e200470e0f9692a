package shim

import (
	"context"
	"errors"
	"time"

	"github.com/distcache/distcache/dataplane/wire"
)

// invalidation is phase 1's call to one owner.
type invalidation struct {
	owner    owner
	cancel   context.CancelFunc
	done     bool  // the call returned
	held     bool  // the acknowledgement carried FlagHit
	err      error // the call failed
	released bool  // not waited for: a newer map removed the owner
}

// invalidationResult is a finished call, by index.
type invalidationResult struct {
	i    int
	held bool
	err  error
}

// invalidate is phase 1 (DistCache §4.3): INVALIDATE(key, v) to every owner
// in parallel, each retransmitted until acknowledged or InvalidateTimeout.
// It fails unless every owner it waits for acknowledged with StatusOK;
// best-effort owners get one datagram and are not waited for. It returns
// the owners phase 2 updates (those that acknowledged) and how many of them
// held a copy of the key: their acknowledgement carried FlagHit.
//
// Phase 1 follows the partition map while it waits (§4.4): when a new map
// arrives, the owners it no longer has as active members are released —
// a failed node drops its copies when it loads the map and clients stop
// reading from it, so waiting for a dead node's acknowledgement would only
// refuse the write — and the key's owners under the new map are
// invalidated too. So a write that starts while a cache node dies waits
// for the failover's map, not for InvalidateTimeout.
func (s *Shim) invalidate(key string, v uint64) ([]owner, int, error) {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.InvalidateTimeout)
	defer cancel()
	p := &phaseOne{s: s, ctx: ctx, key: key, v: v, results: make(chan invalidationResult), stop: make(chan struct{})}
	defer close(p.stop)
	view := s.view.Load()
	p.start(view, time.Now())
	for p.waiting > 0 {
		select {
		case r := <-p.results:
			p.finish(r)
		case <-view.replaced:
			view = s.view.Load()
			p.release(view)
			p.start(view, time.Now())
		}
	}
	return p.outcome()
}

// phaseOne is the state of one write's phase 1, owned by invalidate's
// goroutine; the calls report on results.
type phaseOne struct {
	s       *Shim
	ctx     context.Context
	key     string
	v       uint64
	calls   []*invalidation
	waiting int // calls neither done nor released
	results chan invalidationResult
	stop    chan struct{} // closed when invalidate returns: unread results are dropped
}

// start invalidates the owners of key under view that phase 1 has not
// invalidated yet.
func (p *phaseOne) start(view *mapView, now time.Time) {
	mv := uint64(view.cur.version)
	for _, o := range view.owners(p.key, now, p.s.cfg.PrevMapGrace) {
		if p.has(o) {
			continue
		}
		m := wire.Message{Header: wire.Header{Op: wire.OpInvalidate, ValueVersion: p.v, MapVersion: mv}, Key: []byte(p.key)}
		p.s.stats.invalidations.Add(1)
		if o.bestEffort {
			m.Seq = p.s.ep.NextSeq()
			p.s.metrics.invalidationsBestEffort.Inc()
			if err := p.s.ep.Send(o.addr, &m); err != nil {
				p.s.log.Debug("best-effort invalidation not sent", "key", p.key, "owner", o.name, "err", err)
			}
			p.calls = append(p.calls, &invalidation{owner: o, released: true})
			continue
		}
		ctx, cancel := context.WithCancel(p.ctx)
		i := len(p.calls)
		p.calls = append(p.calls, &invalidation{owner: o, cancel: cancel})
		p.waiting++
		go func() {
			reply, err := p.s.call(ctx, o, &m)
			select {
			case p.results <- invalidationResult{i: i, held: err == nil && reply.Has(wire.FlagHit), err: err}:
			case <-p.stop:
			}
			cancel()
		}()
	}
}

// has reports whether phase 1 has invalidated o's address already.
func (p *phaseOne) has(o owner) bool {
	for _, c := range p.calls {
		if c.owner.addr == o.addr {
			return true
		}
	}
	return false
}

// finish records a call's result.
func (p *phaseOne) finish(r invalidationResult) {
	c := p.calls[r.i]
	if c.released || c.done {
		return
	}
	c.done, c.held, c.err = true, r.held, r.err
	p.waiting--
	if r.err != nil {
		p.s.metrics.invalidationsFail.Inc()
		p.s.log.Warn("invalidation not acknowledged", "key", p.key, "version", p.v, "owner", c.owner.name,
			"addr", c.owner.addr, "err", r.err)
		return
	}
	p.s.metrics.invalidationsOK.Inc()
}

// release stops waiting for the owners that view has no active member at.
func (p *phaseOne) release(view *mapView) {
	for _, c := range p.calls {
		if c.done || c.released || view.cur.active[c.owner.addr] {
			continue
		}
		c.released = true
		c.cancel()
		p.waiting--
		p.s.stats.invalidationsReleased.Add(1)
		p.s.log.Info("invalidation released: owner removed by a new partition map", "key", p.key,
			"version", p.v, "owner", c.owner.name, "map_version", view.cur.version)
	}
}

// outcome is phase 1's result once nothing is waited for.
func (p *phaseOne) outcome() ([]owner, int, error) {
	var (
		acked  []owner
		copies int
		errs   []error
	)
	for _, c := range p.calls {
		switch {
		case c.released:
		case c.err != nil:
			errs = append(errs, c.err)
		default:
			acked = append(acked, c.owner)
			if c.held {
				copies++
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, 0, err
	}
	p.s.stats.copies.Add(uint64(copies))
	p.s.metrics.copies.Add(float64(copies))
	return acked, copies, nil
}
