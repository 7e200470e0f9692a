package shim

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"time"

	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
)

// maxInvalidations bounds the calls of one phase 1: an owner per layer
// under the current map and the previous one, with room to spare.
const maxInvalidations = 64

// invalidation is phase 1's call to one owner.
type invalidation struct {
	owner    owner
	cancel   func() // ends the call (transport.Endpoint.CallManyFunc's stop)
	done     bool   // the call returned
	held     bool   // the acknowledgement carried FlagHit
	err      error  // the call failed
	released bool   // not waited for (any more): the owner can no longer serve the key
}

// waiting reports whether phase 1 still waits for c.
func (c *invalidation) waiting() bool { return !c.done && !c.released }

// invalidationResult is a finished call, by index.
type invalidationResult struct {
	i    int
	held bool
	err  error
}

// invalidate is phase 1 (DistCache §4.3): INVALIDATE(key, v) to every owner
// in parallel, each retransmitted until acknowledged or InvalidateTimeout.
// It fails unless every owner it waits for acknowledged with StatusOK. An
// owner that can no longer serve the key from a copy — it left the key's
// ownership, or was fenced, at least the serving lease (plus the map's
// delivery lag) ago — is released: phase 1 stops waiting for it, and an
// owner released before the write starts gets one best-effort datagram
// (owners.go, docs/dataplane.md Fencing). It returns the owners phase 2
// updates (those that acknowledged), how many of them held a copy of the
// key (their acknowledgement carried FlagHit), and whether it released an
// owner without its acknowledgement.
//
// Phase 1 follows the partition map while it waits (§4.4): when a new map
// arrives, the key's owners under it are invalidated too, and the release
// times of the owners already called are recomputed from it. So a write
// that starts while a cache node dies waits until the node is fenced for
// the lease (the failover's fencing step lets that happen within the grace
// period), not for InvalidateTimeout.
func (s *Shim) invalidate(key string, v uint64) (acked []owner, copies int, released bool, err error) {
	view, now := s.view.Load(), time.Now()
	owners := s.owners(view, key, now)
	if s.noneMayHold(key, owners) {
		return nil, 0, false, nil // no owner holds an entry: nothing to call or wait for
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.InvalidateTimeout)
	defer cancel()
	p := &phaseOne{s: s, ctx: ctx, key: key, v: v, results: make(chan invalidationResult, maxInvalidations), stop: make(chan struct{})}
	defer close(p.stop)
	release := time.NewTimer(time.Hour)
	defer release.Stop()
	p.followOwners(view, owners, now, release)
	for p.waiting > 0 {
		select {
		case r := <-p.results:
			p.finish(r)
		case now := <-release.C:
			p.follow(view, now, release)
		case <-view.replaced:
			view = s.view.Load()
			p.follow(view, time.Now(), release)
		}
	}
	return p.outcome()
}

// owners are the nodes a write of key at now must invalidate under view
// (mapView.owners, with the shim's release time and grace).
func (s *Shim) owners(view *mapView, key string, now time.Time) []owner {
	return view.owners(key, now, s.releaseAfter(), s.pastMapGrace())
}

// noneMayHold reports whether none of owners, key's, may hold an entry
// for it (holders.go), counting them as skipped: phase 1 then has nothing
// to do, and the write skips its machinery. It is decided under the key's
// lock, as follow decides it for each owner.
func (s *Shim) noneMayHold(key string, owners []owner) bool {
	for _, o := range owners {
		if s.mayHold(key, o) {
			return false
		}
	}
	s.stats.invalidationsSkipped.Add(uint64(len(owners)))
	return true
}

// phaseOne is the state of one write's phase 1, owned by invalidate's
// goroutine; the calls report on results.
type phaseOne struct {
	s       *Shim
	ctx     context.Context
	key     string
	v       uint64
	calls   []*invalidation
	skip    []netip.AddrPort // owners not invalidated: they hold no entry for the key
	waiting int              // calls neither done nor released
	results chan invalidationResult
	stop    chan struct{} // closed when invalidate returns: unread results are dropped
}

// follow brings phase 1 up to date with view at now: the calls in progress
// take their owners' release times under view (an owner absent from it is
// released), those due are released, the owners not called yet are
// invalidated, and the timer is set for the next release.
func (p *phaseOne) follow(view *mapView, now time.Time, timer *time.Timer) {
	p.followOwners(view, p.s.owners(view, p.key, now), now, timer)
}

// followOwners is follow with the key's owners under view at now. An
// owner that renewed a lease with the shim is released when its leases
// end, if the map does not release it sooner (withLease).
func (p *phaseOne) followOwners(view *mapView, owners []owner, now time.Time, timer *time.Timer) {
	for i := range owners {
		owners[i] = p.s.withLease(owners[i])
	}
	for _, c := range p.calls {
		if !c.waiting() {
			continue
		}
		c.owner.releaseAt, c.owner.byLease = now, false // not an owner under view any more
		for _, o := range owners {
			if o.addr == c.owner.addr {
				c.owner.releaseAt, c.owner.byLease = o.releaseAt, o.byLease
				break
			}
		}
	}
	p.releaseDue(view, now)
	for _, o := range owners {
		if p.has(o) || p.skipped(o) {
			continue
		}
		if !p.s.mayHold(p.key, o) { // no entry there (holders.go)
			p.skip = append(p.skip, o.addr)
			p.s.stats.invalidationsSkipped.Add(1)
			continue
		}
		p.start(view, o, now)
	}
	var next time.Time
	for _, c := range p.calls {
		if c.waiting() && !c.owner.releaseAt.IsZero() && (next.IsZero() || c.owner.releaseAt.Before(next)) {
			next = c.owner.releaseAt
		}
	}
	if !next.IsZero() {
		timer.Reset(next.Sub(now))
	}
}

// start invalidates owner o: a call, or one best-effort datagram when o is
// released already.
func (p *phaseOne) start(view *mapView, o owner, now time.Time) {
	m := wire.Message{Header: wire.Header{Op: wire.OpInvalidate, ValueVersion: p.v, MapVersion: uint64(view.cur.version)}, Key: []byte(p.key)}
	p.s.stats.invalidations.Add(1)
	released := !o.releaseAt.IsZero() && !now.Before(o.releaseAt)
	if released {
		released, o.releaseAt = p.s.releaseByLease(o, now)
	}
	if released {
		m.Seq = p.s.ep.NextSeq()
		p.s.metrics.invalidationsBestEffort.Inc()
		if err := p.s.ep.Send(o.addr, &m); err != nil {
			p.s.log.Debug("best-effort invalidation not sent", "key", p.key, "owner", o.name, "err", err)
		}
		p.calls = append(p.calls, &invalidation{owner: o, released: true})
		return
	}
	i := len(p.calls)
	c := &invalidation{owner: o}
	p.calls = append(p.calls, c)
	p.waiting++
	deadline, _ := p.ctx.Deadline()
	req := []transport.Request{{Dst: o.addr, Msg: &m}}
	// No goroutine waits for the call: the reader that receives the
	// acknowledgement hands it over (results has room for every call,
	// so that hand-over never blocks).
	c.cancel = p.s.ep.CallManyFunc(deadline, req, func(out []transport.Reply) {
		r := invalidationResult{i: i, err: replyError(out[0], o, &m)}
		r.held = r.err == nil && out[0].Msg.Has(wire.FlagHit)
		select {
		case p.results <- r:
		case <-p.stop:
		}
	})
}

// skipped reports whether phase 1 found that o holds no entry for the key.
// It is decided once per write: a node the directory did not list when
// the write held the key's lock cannot fetch the key before the write
// ends.
func (p *phaseOne) skipped(o owner) bool { return slices.Contains(p.skip, o.addr) }

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
	if !c.waiting() {
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
	// The node now has this write pending, with readers parked on it
	// until its phase 2. Listed, the node is invalidated by the key's
	// next write even once it acknowledges a FLUSH, so that write's
	// phase 2 releases them with its own value, not this one's.
	p.s.holders.add(p.key, c.owner.addr)
}

// releaseDue stops waiting for the calls whose owners are released at now.
func (p *phaseOne) releaseDue(view *mapView, now time.Time) {
	for _, c := range p.calls {
		if !c.waiting() || c.owner.releaseAt.IsZero() || now.Before(c.owner.releaseAt) {
			continue
		}
		var ok bool
		if ok, c.owner.releaseAt = p.s.releaseByLease(c.owner, now); !ok {
			continue // granted again since: wait for that lease
		}
		c.released = true
		c.cancel()
		p.waiting--
		p.s.stats.invalidationsReleased.Add(1)
		p.s.metrics.invalidationsReleased.Inc()
		p.s.log.Info("invalidation released: the owner can no longer serve the key", "key", p.key,
			"version", p.v, "owner", c.owner.name, "map_version", view.cur.version)
	}
}

// outcome is phase 1's result once nothing is waited for.
func (p *phaseOne) outcome() (acked []owner, copies int, released bool, err error) {
	var errs []error
	for _, c := range p.calls {
		switch {
		case c.released:
			released = true
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
		return nil, 0, released, err
	}
	p.s.stats.copies.Add(uint64(copies))
	p.s.metrics.copies.Add(float64(copies))
	return acked, copies, released, nil
}
