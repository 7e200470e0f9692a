package cachenode

import (
	"math"
	"net/netip"
	"time"

	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
)

// handleFlush drops every entry of the storage shard that FLUSH names (its
// Key): a shim that starts asks it of every node, since it does not know
// which copies an earlier run of it handed out, and from then on
// invalidates a node only for the keys the node fetched from it
// (shim/holders.go). The node's flights are sealed too, so that no reader
// arriving from now on joins a backend read that an earlier run of the
// shim answered; and the shard's pending writes end, their parked readers
// sent to the shim: a write the shim no longer invalidates this node for
// would otherwise leave them to an old write's phase 2, whose value may
// be older than a later write's (the SPIN model in
// dataplane/heldkeys/testdata/trim_forget.pml, WITH_FLUSH). A shard the
// node's map does not name is refused with StatusNotOwner; the shim asks
// again.
// endWrites ends the pending writes of the keys for which in is true and
// returns the readers parked on them, by key.
func (n *Node) endWrites(in func(key string) bool) map[string][]waiter {
	n.missMu.Lock()
	defer n.missMu.Unlock()
	for key := range n.pending.m {
		if in(key) {
			delete(n.pending.m, key)
		}
	}
	var keys []string
	for key := range n.parked {
		if in(key) {
			keys = append(keys, key)
		}
	}
	out := make(map[string][]waiter, len(keys))
	for _, key := range keys {
		if ws := n.unpark([]byte(key), math.MaxUint64); len(ws) > 0 {
			out[key] = ws
		}
	}
	return out
}

func (n *Node) handleFlush(out transport.Sender, src netip.AddrPort, req *wire.Message, v *view, start time.Time) {
	rack, shard, ok := v.p.Map().StorageShard(string(req.Key))
	if !ok {
		n.refuse(out, src, req, v, n.now(start), wire.StatusNotOwner, start, true)
		return
	}
	n.sealFlights()
	inShard := func(key string) bool {
		r, s := v.p.Shard(key)
		return r == rack && s == shard
	}
	for key, ws := range n.endWrites(inShard) {
		n.forwardParked(key, ws)
	}
	dropped := n.dropEntries(inShard)
	n.stats.flushes.Add(1)
	n.log.Info("storage shard flushed", "shard", string(req.Key), "from", src, "dropped", dropped)
	n.replyInPlace(out, src, req, v, n.loadAt(n.now(start)), wire.StatusOK, 0, 0, nil)
	n.reqs.Observe(wire.OpFlush, metrics.ResultOK, time.Since(start))
}
