package cachenode

import (
	"context"
	"errors"
	"time"
)

// This file is the node's graceful stop.
//
// A node told to stop (a pod deleted, a container restarted by an
// upgrade) drains before it closes. It refuses every read with
// StatusUnavailable, so that a reader tries the key's other candidate or
// its shim at once instead of waiting out a timeout, and serves no cached
// value (its lease is revoked). It goes on acknowledging the shims'
// INVALIDATEs and UPDATEs, so that writes of its keys do not wait for it.
// It drains until its map has shown it not Active for twice its serving
// lease — every shim has then stopped waiting for its acknowledgements,
// since a shim releases an owner a lease after it learned that the owner
// left — or until the caller's context ends, whichever comes first. Its
// /healthz fails meanwhile, so that a control loop or a readiness probe
// fences it. A node killed without a drain is safe too: shims wait for it
// until they release it, which only delays the writes of its keys.

// ErrDraining is what Healthy reports while the node drains.
var ErrDraining = errors.New("draining: the node is stopping")

// drainPoll is how often Drain checks whether the shims have released
// the node.
const drainPoll = 20 * time.Millisecond

// Drain refuses reads and keeps acknowledging writes' coherence messages
// until the node's map has shown it not Active for twice its lease, or
// until ctx ends. It returns how it ended: nil once released, ctx's error
// otherwise. The node keeps its socket; Close it after.
func (n *Node) Drain(ctx context.Context) error {
	n.mapMu.Lock()
	n.draining.Store(true)
	n.revoke()
	n.mapMu.Unlock()
	t := time.NewTicker(drainPoll)
	defer t.Stop()
	for {
		if since := n.inactiveSince.Load(); since != 0 && n.now(time.Now())-since >= 2*int64(n.cfg.Lease) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Healthy reports ErrDraining once Drain was called.
func (n *Node) Healthy() error {
	if n.draining.Load() {
		return ErrDraining
	}
	return nil
}
