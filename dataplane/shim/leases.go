package shim

import (
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/distcache/distcache/dataplane/lease"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
)

// This file is the shim's side of the serving leases it grants cache
// nodes (package lease; docs/dataplane.md, Leases granted by the shims).
// The shim answers a node's RENEW with a grant of its epoch for the node
// and records how long that grant may last, by the node's address. Phase 1 releases a silent
// owner that renewed with this run of the shim once its leases ended,
// if the map does not release it sooner, and moves it to a new epoch;
// UPDATEs and fills to such a node carry its epoch. A node that never
// renewed is released by the map's fencing alone and sent no epoch.

// leaseMargin is the margin a grant's recorded end adds for the clocks'
// rates: 2 % of the lease covers nodes whose monotonic clock runs up to
// 1 % slower than the shim's (docs/dataplane.md, What it assumes).
func leaseMargin(length time.Duration) time.Duration { return length / 50 }

// newGrantor returns the leases of a shim that starts now.
func newGrantor(length time.Duration) (*lease.Grantor, error) {
	return lease.NewGrantor(0, length, leaseMargin(length), rand.Uint32())
}

// leaseNow is now on the clock of the shim's grants: time since New.
func (s *Shim) leaseNow(now time.Time) time.Duration { return now.Sub(s.born) }

// serveRenew grants the node at src a lease on this shard's keys: a
// RENEW_REPLY with the node's epoch (FlagEpoch) and the lease's length
// in ValueVersion (ns), so that no node holds it longer than the shim
// waits for. A RENEW for another
// shard is refused with not_owner and grants nothing.
func (s *Shim) serveRenew(out transport.Sender, src netip.AddrPort, req *wire.Message, now time.Time) {
	if string(req.Key) != s.cfg.Shard {
		s.replyNow(out, src, req, wire.StatusNotOwner)
		return
	}
	m := wire.Message{
		Header: wire.Header{Op: wire.OpRenewReply, Seq: req.Seq, Digest: req.Digest, MapVersion: s.mapVersion(),
			ValueVersion: uint64(s.cfg.Lease)},
		Key: req.Key,
	}
	m.SetEpoch(s.leases.Grant(src, s.leaseNow(now)))
	s.stats.grants.Add(1)
	s.sendVia(out, src, &m)
}

// withLease moves o's release time to when every lease the shim granted
// it ends, if o renewed with this run of the shim and that is sooner than
// the map's release.
func (s *Shim) withLease(o owner) owner {
	until, _, ok := s.leases.Renewed(o.addr)
	if !ok {
		return o
	}
	if at := s.born.Add(until); o.releaseAt.IsZero() || at.Before(o.releaseAt) {
		o.releaseAt, o.byLease = at, true
	}
	return o
}

// releaseByLease releases o at now if it is released by lease: it moves o
// to a new epoch, in one step with the check that its leases ended. A
// grant sent since o's release time was computed makes it wait longer:
// it returns false and the new release time.
func (s *Shim) releaseByLease(o owner, now time.Time) (bool, time.Time) {
	if !o.byLease {
		return true, o.releaseAt
	}
	if ok, wait := s.leases.Release(o.addr, s.leaseNow(now)); !ok {
		return false, now.Add(wait)
	}
	s.stats.leaseReleases.Add(1)
	return true, now
}

// epoch is dst's epoch if dst renewed a lease with this run of the shim,
// else 0: a message to it carries no FlagEpoch.
func (s *Shim) epoch(dst netip.AddrPort) uint64 {
	if _, e, ok := s.leases.Renewed(dst); ok {
		return e
	}
	return 0
}

// epochs are the owners' epochs (epoch), or nil when none renewed.
func (s *Shim) epochs(owners []owner) []uint64 {
	var out []uint64
	for i, o := range owners {
		if e := s.epoch(o.addr); e != 0 {
			if out == nil {
				out = make([]uint64, len(owners))
			}
			out[i] = e
		}
	}
	return out
}
