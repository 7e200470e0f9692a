package cachenode

import (
	"bytes"
	"net/netip"
	"time"

	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
)

// This file holds the coherence rules of DistCache §4.3 as the node applies
// them: INVALIDATE (phase 1), UPDATE (phase 2) and the fill of an insertion.

// invalidate applies phase 1 of the write of version v to key: an entry
// becomes invalid, its version max(version, v), and its value is released
// (an invalid value is never served). It reports whether key was cached.
func (s *store) invalidate(key []byte, v uint64) bool {
	sh := s.shard(bytesView(key))
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.m[string(key)]
	if e == nil {
		return false
	}
	e.valid, e.missing = false, false
	e.version = max(e.version, v)
	s.bytes.Add(-int64(len(e.value)))
	e.value = nil
	return true
}

// updateOutcome is the result of an UPDATE.
type updateOutcome uint8

const (
	updateApplied updateOutcome = iota // entry valid with the new value
	updateIgnored                      // an entry of another version, or not a PUT's update
	updateAbsent                       // no entry
	updateDropped                      // over CapacityBytes: entry removed
)

// update applies phase 2 of the write of version v to key: iff key's entry
// exists and has version v, it takes a copy of value and becomes valid. A
// value that does not fit CapacityBytes removes the entry instead.
func (s *store) update(key []byte, v uint64, value []byte) updateOutcome {
	sh := s.shard(bytesView(key))
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.m[string(key)]
	switch {
	case e == nil:
		return updateAbsent
	case e.version != v:
		return updateIgnored
	}
	if !s.reserve(int64(len(value) - len(e.value))) {
		s.deleteLocked(sh, string(key), e)
		return updateDropped
	}
	e.value = bytes.Clone(value)
	e.valid, e.missing = true, false
	return updateApplied
}

// fillOutcome is the result of a FETCH_REPLY.
type fillOutcome uint8

const (
	fillApplied fillOutcome = iota // entry valid with the fetched value
	fillStale                      // not the same invalid entry, or C too old
	fillRefused                    // over CapacityBytes: entry removed
)

// fill applies a FETCH_REPLY carrying value (owned by the reply, kept
// without copying) and the shim's counter c to e, the entry the FETCH was
// sent for: iff e is still key's entry, still invalid and c >= its version,
// e becomes valid with version c — a negative entry when missing (the key
// was not in storage at c). It clears e.fetching in every case.
func (s *store) fill(key string, e *entry, c uint64, value []byte, missing bool) fillOutcome {
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e.fetching = false
	if sh.m[key] != e || e.valid || c < e.version {
		return fillStale
	}
	if !s.reserve(int64(len(value) - len(e.value))) {
		s.deleteLocked(sh, key, e)
		return fillRefused
	}
	e.value, e.version, e.valid, e.missing = value, c, true, missing
	return fillApplied
}

// handleInvalidate serves INVALIDATE: phase 1 on the cached copy, then the
// write is recorded as pending and the key's flight sealed, so that later
// readers do not join a backend read that may precede the write; always
// acknowledged. The acknowledgement carries FlagHit iff the node held an
// entry for the key (valid or a placeholder): it then costs the node a work
// unit, and the shim one more (the copy it invalidates and updates).
func (n *Node) handleInvalidate(out transport.Sender, src netip.AddrPort, req *wire.Message, v *view, start time.Time) {
	held := n.store.invalidate(req.Key, req.ValueVersion)
	n.beginWrite(req.Key, req.ValueVersion, start)
	n.stats.invalidations.Add(1)
	var flags wire.Flag
	if held {
		flags = wire.FlagHit
	}
	n.replyInPlace(out, src, req, v, n.loadAt(n.now(start)), wire.StatusOK, flags, req.ValueVersion, nil)
	n.reqs.Observe(wire.OpInvalidate, metrics.ResultOK, time.Since(start))
	if held {
		n.spend(out, 1) // after the acknowledgement: the writer does not wait for the node's queue
	}
}

// handleUpdate serves UPDATE, phase 2: it ends the pending write, for a
// PUT (StatusOK) refreshes the cached copy, and answers the readers parked
// on the write. A DEL's phase 2 carries
// StatusNotFound and a failed write's another status; their copies stay
// invalid. Always acknowledged; an UPDATE of a key the node holds an entry
// for costs a work unit, whether it applies or not.
func (n *Node) handleUpdate(out transport.Sender, src netip.AddrPort, req *wire.Message, v *view, start time.Time) {
	key := bytesView(req.Key)
	parked := n.endWrite(req.Key, req.ValueVersion)
	var outcome updateOutcome
	switch {
	case req.Status == wire.StatusOK && !n.shimCurrent(v, key, &req.Header):
		// Sent in an epoch the node left: the shim wrote the key without
		// it once its lease ended. The copy stays invalid.
		if n.store.invalidate(req.Key, req.ValueVersion) {
			outcome = updateIgnored
		} else {
			outcome = updateAbsent
		}
	case req.Status == wire.StatusOK:
		outcome = n.store.update(req.Key, req.ValueVersion, req.Value)
	case n.store.holds(req.Key):
		outcome = updateIgnored
	default:
		outcome = updateAbsent
	}
	switch outcome {
	case updateApplied:
		n.stats.updates.Add(1)
	case updateIgnored, updateAbsent:
		n.stats.updatesIgnored.Add(1)
	case updateDropped:
		n.stats.updatesIgnored.Add(1)
		n.stats.evictions.Add(1)
		n.det.Untrack(key)
		n.log.Debug("dropped entry: update over the byte capacity",
			"key", string(req.Key), "bytes", len(req.Value), "capacity_bytes", n.cfg.CapacityBytes)
	}
	n.answerParked(out, req, v, parked, outcome == updateApplied, start)
	n.replyInPlace(out, src, req, v, n.loadAt(n.now(start)), wire.StatusOK, 0, req.ValueVersion, nil)
	n.reqs.Observe(wire.OpUpdate, metrics.ResultOK, time.Since(start))
	if outcome != updateAbsent {
		n.spend(out, 1) // after the acknowledgement, as an INVALIDATE's
	}
}
