package cachenode

import (
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	shimlease "github.com/distcache/distcache/dataplane/lease"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/placement/partmap"
)

// This file is the node's side of the leases the storage shims grant
// (package lease; docs/dataplane.md, Leases granted by the shims), on when
// Config.ShimLeases is set. A node serves a cached value of a shim's key
// only while it holds that shim's lease; it needs no map lease (lease.go).
//
// A grant carries the shim's map version, and the node applies it only if
// its own map is at least as new: a shim releases an owner that left a
// key by a map change a lease (plus margins) after it installed the
// change, and every grant it sent since carries the new version, so a
// node that has not seen that map holds no lease of it by then. A node
// that sees a newer version in a grant reads its map source at once
// (Config.MapBehind).
//
// Every third of a lease the node sends RENEW to each shim of whose keys
// it holds entries, in one batch, and keeps the time it sent it: the
// grant runs from then, for the shorter of the node's lease and the
// length the shim grants. A shim that heard nothing from the node for a
// lease (plus a margin for the clocks' rates) stops waiting for its
// acknowledgements and moves it to a new epoch; the node's first grant in
// the new epoch drops the shim's entries first (flushShim), as does its
// first grant from a shim at all. UPDATEs and fills carry the epoch they
// were sent in, and only those of the epoch the node holds reach the cache.
//
// A key is inserted only under its shim's lease: an insertion interval
// first runs a renewal round that asks the shims of its keys whose lease
// the node does not hold, so that a first grant's flush, or a new epoch's,
// drops nothing the interval fetched.

// shimLeases is the node's leases from the storage shims.
type shimLeases struct {
	// holder is the leases for the storage layout of layout: nil until the
	// first map, and always nil unless Config.ShimLeases.
	holder atomic.Pointer[shimlease.Holder]

	mu     sync.Mutex // guards layout and wanted
	layout []string   // the storage shards' names, by global index (holder's)
	// wanted is the shards the insertion loop would insert keys of, whose
	// first grant the node asks for although it holds none of their keys.
	wanted map[int32]struct{}
	// length is the shortest lease granted so far (ns), at most
	// Config.Lease: the renewal loop runs every third of it.
	length atomic.Int64

	// Counters: grants received, the flushes they started, renewals
	// unanswered or refused, grants not applied because the shim's map was
	// newer than the node's, and UPDATEs and fills of an epoch the node
	// does not hold.
	grants, flushes, failures, behind, staleEpochs atomic.Uint64
}

// storageLayout is the names of m's storage shards by global index
// (partmap.Placement.ShardIndex).
func storageLayout(m *partmap.Map) []string {
	var names []string
	for _, r := range m.Storage.Racks {
		for _, s := range r.Shards {
			names = append(names, s.Name)
		}
	}
	return names
}

// setLayout follows m's storage layout: a new layout (the first one, or
// shards added, removed or renamed) starts a new holder without any lease.
// It reports whether the layout changed after the first, when the caller
// drops every entry: their shard indexes are the old layout's. The caller
// holds mapMu.
func (n *Node) setLayout(m *partmap.Map) bool {
	if !n.cfg.ShimLeases {
		return false
	}
	names := storageLayout(m)
	n.shims.mu.Lock()
	defer n.shims.mu.Unlock()
	if n.shims.holder.Load() != nil && slices.Equal(names, n.shims.layout) {
		return false
	}
	h, err := shimlease.NewHolder(max(len(names), 1), n.cfg.Lease)
	if err != nil {
		n.log.Error("cannot keep the shims' leases", "err", err)
		return false
	}
	changed := n.shims.holder.Load() != nil
	n.shims.layout, n.shims.wanted = names, map[int32]struct{}{}
	n.shims.holder.Store(h)
	return changed
}

// servable reports whether the node may serve a cached value of a key of
// shim (a global shard index) at now (Node.now's clock): under the
// shim's lease with Config.ShimLeases, else under its map lease
// (lease.go). It does not allocate.
func (n *Node) servable(shim int32, now int64) bool {
	if !n.cfg.ShimLeases {
		return n.lease.valid(now)
	}
	h := n.shims.holder.Load()
	return h != nil && h.Valid(int(shim), time.Duration(now))
}

// leasedNow reports whether the node holds every lease it serves under:
// with Config.ShimLeases, the lease of every shim whose keys it caches;
// else its map lease.
func (n *Node) leasedNow() bool {
	now := n.now(time.Now())
	if !n.cfg.ShimLeases {
		return n.lease.valid(now)
	}
	for _, s := range n.store.shims(nil) {
		if !n.servable(s, now) {
			return false
		}
	}
	return true
}

// shimCurrent reports whether a value the shim of key sent with m's epoch
// may reach the cache (lease.Holder.Current); always true without
// Config.ShimLeases. A stale one is counted.
func (n *Node) shimCurrent(v *view, key string, m *wire.Header) bool {
	if !n.cfg.ShimLeases {
		return true
	}
	h := n.shims.holder.Load()
	if h != nil && h.Current(v.p.ShardIndex(key), m.Epoch()) {
		return true
	}
	n.shims.staleEpochs.Add(1)
	return false
}

// granted reports whether the node holds shim's lease now; when it does
// not and want is set, it records that the insertion loop wants the next
// renewal round to ask for one. A node renews only the leases of shims
// whose keys it holds, so one that dropped them all (a map that made it
// not Active, a flush) asks again here, and takes the shim's current
// epoch before it fetches: fills of another epoch would all be refused.
// Always true without Config.ShimLeases.
func (n *Node) granted(shim int32, want bool) bool {
	if !n.cfg.ShimLeases || n.servable(shim, n.now(time.Now())) {
		return true
	}
	if want {
		n.shims.mu.Lock()
		n.shims.wanted[shim] = struct{}{}
		n.shims.mu.Unlock()
	}
	return false
}

// renewLoop renews the shims' leases every third of the shortest lease
// granted (at most Config.Lease), until Close.
func (n *Node) renewLoop() {
	t := time.NewTimer(n.renewPeriod())
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		}
		n.renewShims()
		t.Reset(n.renewPeriod())
	}
}

// renewPeriod is a third of the shortest lease granted, or of
// Config.Lease.
func (n *Node) renewPeriod() time.Duration {
	l := n.cfg.Lease
	if g := time.Duration(n.shims.length.Load()); g > 0 && g < l {
		l = g
	}
	return max(l/3, time.Millisecond)
}

// renewal is one RENEW of a round: the shard's global index.
type renewal struct{ shim int32 }

// renewShims sends RENEW to the shims of every shard the node holds
// entries of or wants a first grant from, in one batch, and applies the
// grants; each runs from the time the batch was sent.
func (n *Node) renewShims() {
	v, h := n.view.Load(), n.shims.holder.Load()
	if v == nil || h == nil {
		return
	}
	shims := n.store.shims(nil)
	n.shims.mu.Lock()
	layout := n.shims.layout
	for s := range n.shims.wanted {
		shims = append(shims, s)
	}
	n.shims.mu.Unlock()
	slices.Sort(shims)
	shims = slices.Compact(shims)

	var reqs []transport.Request
	var sentTo []int32
	for _, s := range shims {
		if int(s) >= len(layout) {
			continue
		}
		dst, ok := shimAt(v, int(s))
		if !ok {
			n.shims.failures.Add(1)
			continue
		}
		m := &wire.Message{Header: wire.Header{Op: wire.OpRenew, MapVersion: v.version}, Key: []byte(layout[s])}
		reqs = append(reqs, transport.Request{Dst: dst, Msg: m})
		sentTo = append(sentTo, s)
	}
	if len(reqs) == 0 {
		return
	}
	var behind uint64 // the newest map version a shim granted under, if newer than the node's
	defer func() {
		if behind > 0 && n.cfg.MapBehind != nil {
			n.cfg.MapBehind(int64(behind))
		}
	}()
	sent := n.now(n.clock())
	out := make([]transport.Reply, len(reqs))
	// A round waits at most half a period: one shim that does not answer
	// delays the others' grants no more than that, and the round after
	// next still comes before the grants of this one run out.
	n.ep.CallMany(n.ctx, time.Now().Add(n.renewPeriod()/2), reqs, out)
	for i, r := range out {
		s := sentTo[i]
		if r.Err != nil || r.Msg.Op != wire.OpRenewReply || r.Msg.Status != wire.StatusOK || !r.Msg.Has(wire.FlagEpoch) {
			n.shims.failures.Add(1)
			n.log.Debug("lease not renewed", "shard", layout[s], "status", r.Msg.Status, "err", r.Err)
			continue
		}
		if n.shims.holder.Load() != h {
			return // a new storage layout: these grants are the old one's
		}
		if cur := n.view.Load(); r.Msg.MapVersion > cur.version {
			// Granted under a map the node has not seen, which may have
			// moved keys away from it: no lease until it has that map.
			n.shims.behind.Add(1)
			behind = max(behind, r.Msg.MapVersion)
			continue
		}
		length := time.Duration(r.Msg.ValueVersion)
		if cur := n.shims.length.Load(); length > 0 && (cur == 0 || int64(length) < cur) {
			n.shims.length.Store(int64(length))
		}
		if h.Grant(int(s), r.Msg.Epoch(), time.Duration(sent), length, func() { n.flushShim(int(s)) }) {
			n.shims.flushes.Add(1)
		}
		n.shims.grants.Add(1)
		n.shims.mu.Lock()
		delete(n.shims.wanted, s)
		n.shims.mu.Unlock()
	}
}

// shimAt is the address of the shim of the shard of global index shim.
func shimAt(v *view, shim int) (a netip.AddrPort, ok bool) {
	for r := range v.p.Map().Storage.Racks {
		first, count := v.p.RackShards(r)
		if shim >= first && shim < first+count {
			a = v.addrs.Shard(r, shim-first)
			return a, a.IsValid()
		}
	}
	return a, false
}

// flushShim drops the node's entries of the keys of the shard of global
// index shim, as a FLUSH of it does (flush.go): the shim moved the node to
// a new epoch, having written those keys without its acknowledgement.
// Lease.Holder.Grant calls it before the new epoch's lease starts.
func (n *Node) flushShim(shim int) {
	v := n.view.Load()
	n.sealFlights()
	in := func(key string) bool { return v.p.ShardIndex(key) == shim }
	for key, ws := range n.endWrites(in) {
		n.forwardParked(key, ws)
	}
	dropped := n.dropEntries(in)
	level := slog.LevelDebug // a first grant usually finds nothing to drop
	if dropped > 0 {
		level = slog.LevelInfo
	}
	n.log.Log(n.ctx, level, "entries of a shim's keys dropped for its new epoch", "shard", n.shimName(shim), "dropped", dropped)
}

// shimName is the name of the shard of global index shim.
func (n *Node) shimName(shim int) string {
	n.shims.mu.Lock()
	defer n.shims.mu.Unlock()
	if shim < len(n.shims.layout) {
		return n.shims.layout[shim]
	}
	return fmt.Sprint(shim)
}
