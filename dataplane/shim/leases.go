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
// and records how long that grant may last. Nodes do not renew yet: the
// shim still releases silent owners by the map's fencing alone.

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
// RENEW_REPLY with the node's epoch (FlagEpoch). A RENEW for another
// shard is refused with not_owner and grants nothing.
func (s *Shim) serveRenew(out transport.Sender, src netip.AddrPort, req *wire.Message, now time.Time) {
	if string(req.Key) != s.cfg.Shard {
		s.replyNow(out, src, req, wire.StatusNotOwner)
		return
	}
	m := wire.Message{
		Header: wire.Header{Op: wire.OpRenewReply, Seq: req.Seq, Digest: req.Digest, MapVersion: s.mapVersion()},
		Key:    req.Key,
	}
	m.SetEpoch(s.leases.Grant(src.String(), s.leaseNow(now)))
	s.stats.grants.Add(1)
	s.sendVia(out, src, &m)
}
