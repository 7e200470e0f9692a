package cachenode

import (
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
// shim answered. A shard the node's map does not name is refused with
// StatusNotOwner; the shim asks again.
func (n *Node) handleFlush(out transport.Sender, src netip.AddrPort, req *wire.Message, v *view, start time.Time) {
	rack, shard, ok := v.p.Map().StorageShard(string(req.Key))
	if !ok {
		n.refuse(out, src, req, v, n.now(start), wire.StatusNotOwner, start, true)
		return
	}
	n.sealFlights()
	dropped := n.dropEntries(func(key string) bool {
		r, s := v.p.Shard(key)
		return r == rack && s == shard
	})
	n.stats.flushes.Add(1)
	n.log.Info("storage shard flushed", "shard", string(req.Key), "from", src, "dropped", dropped)
	n.replyInPlace(out, src, req, v, n.loadAt(n.now(start)), wire.StatusOK, 0, 0, nil)
	n.reqs.Observe(wire.OpFlush, metrics.ResultOK, time.Since(start))
}
