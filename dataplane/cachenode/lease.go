package cachenode

import (
	"sync/atomic"
	"time"
)

// This file is the node's map lease (docs/dataplane.md, Fencing): a
// serving lease that the node renews by reading its partition map, and
// without which it serves no cached value unless it holds the shims'
// leases instead (Config.ShimLeases, shimlease.go).
//
// A node may answer a read from its copy, let a reader join a backend read
// in flight, or park a reader on a pending write only while its lease is
// valid. The lease runs Config.Lease from the moment a read of the map
// source started that found the node Active at the version it uses (Renew),
// measured on the node's monotonic clock. A shim stops waiting for a node's
// acknowledgements only once the node has left the ring, or been fenced, for
// the lease (plus the source's delivery lag) after the shim itself learned
// it; by then every read of the source the node made before the change is
// older than the lease, so the node holds no lease it could have renewed
// under the older map. A node that was paused, partitioned or starved past
// its lease therefore wakes up unable to serve, and must read the map — and
// drop what the maps it missed invalidate — before it serves again.

// lease is the node's serving lease.
type lease struct {
	// until is the end of the lease in ns on the node's monotonic clock
	// (Node.now); 0 until the first renewal.
	until atomic.Int64
	// renewals counts the renewals that extended the lease, expiries those
	// that started a new one after the previous had run out (or none
	// existed).
	renewals, expiries atomic.Uint64
}

// valid reports whether the lease covers now (Node.now's clock).
func (l *lease) valid(now int64) bool { return now < l.until.Load() }

// Renew grants the node its serving lease for Config.Lease from at: the
// time a read of the partition map's source started that found version,
// which must be the version the node uses (SetMap runs first for a newer
// one). It does nothing when the version differs or when the node is not
// Active in that map, and never shortens the lease. It reports whether the
// lease was renewed.
func (n *Node) Renew(at time.Time, version int64) bool {
	n.mapMu.Lock() // a map change and the renewal of its version are serialised
	defer n.mapMu.Unlock()
	v := n.view.Load()
	if v == nil || !v.active || v.version != uint64(version) || n.draining.Load() {
		return false
	}
	start := n.now(at)
	until := start + int64(n.cfg.Lease)
	for {
		cur := n.lease.until.Load()
		if until <= cur {
			return true
		}
		if n.lease.until.CompareAndSwap(cur, until) {
			if cur <= start {
				n.lease.expiries.Add(1) // a new lease: the last one had run out
			}
			break
		}
	}
	n.lease.renewals.Add(1)
	return true
}

// leased reports whether the node may serve from its cache at t.
func (n *Node) leased(t time.Time) bool { return n.lease.valid(n.now(t)) }

// revoke ends the lease at once: the node left the Active state. The
// caller holds mapMu.
func (n *Node) revoke() { n.lease.until.Store(0) }
