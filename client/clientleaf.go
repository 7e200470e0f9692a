package client

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/routing"
)

// Reads through a client leaf (Config.ClientLeaf): the top-of-rack switch
// of the client's rack running the client leaf program (DistCache §4.2;
// docs/switches.md, The client leaf). A GET of key k stored in the shard
// of global index g goes to the leaf's read port for g (its port + 1 + g,
// partmap.SwitchReadPort); the leaf sends it on to the less loaded of k's
// spine switch and its rack's storage-leaf switch — the power of two
// choices made in the switch, on the loads the switches stamp in their
// replies — and the reply comes back from the leaf's port. The client
// learns the answering switch's load from the reply as from any other.
//
// Only the first attempt of a read goes through the leaf, and only for a
// key the leaf can route: one a switch can carry (at most
// wire.MaxSwitchKeyLen bytes) with a switch candidate in the client's map
// that is not Fenced (the leaf's tables have no entry for a key without
// one, and a switch would drop its GET). A read through the leaf is not
// hedged: the leaf, not the client, chooses where it goes. Everything else
// takes the client's own path: other keys, writes, read-modify-writes,
// Bypass, and the keys the client reads from storage itself.
//
// When the leaf does not answer within AttemptTimeout, the read falls
// back to the client's own choice among the key's candidates (then the
// shim), as after a cache node that timed out, and the leaf is skipped
// for FailBackoff, after which the next read through it probes it. A
// refusal relayed by the leaf (NOT_OWNER, UNAVAILABLE, OVERLOADED,
// INTERNAL) makes the read go on at the client's own choice without
// skipping the leaf. Both are counted (Stats.LeafFallbacks).

// leafFor is where a GET of key goes through the client leaf under v, and
// whether it does: see above. now is the client's clock.
func (c *Client) leafFor(v *view, key string, cands []partmap.Candidate, now int64) (netip.AddrPort, bool) {
	if !c.cfg.ClientLeaf.IsValid() || c.cfg.Bypass || !wire.SwitchCacheable(len(key), 0) || now < c.leafSkipUntil.Load() {
		return netip.AddrPort{}, false
	}
	for _, cd := range cands {
		if cd.Switch && !cd.Fenced {
			leaf := c.cfg.ClientLeaf
			return netip.AddrPortFrom(leaf.Addr(), partmap.SwitchReadPort(leaf.Port(), cd.Shard)), true
		}
	}
	return netip.AddrPort{}, false
}

// leafRequest is a GET of kb through the client leaf under v, counted.
func (c *Client) leafRequest(v *view, kb []byte) wire.Message {
	c.stats.leafReads.Add(1)
	return wire.Message{Header: wire.Header{Op: wire.OpGet, MapVersion: v.version}, Key: kb}
}

// readLeaf is one GET attempt of kb through the client leaf's port addr.
func (c *Client) readLeaf(ctx context.Context, v *view, cands []partmap.Candidate, addr netip.AddrPort, kb []byte) (Result, string, step, error) {
	m := c.leafRequest(v, kb)
	r, err := c.call(ctx, addr, &m)
	return c.leafAnswered(ctx, v, cands, addr, r, err, c.now())
}

// leafAnswered is the outcome of a GET attempt through the client leaf's
// port addr: its reply r, relayed from the switch the leaf chose, or the
// error that ended the wait, at now (the client's clock).
func (c *Client) leafAnswered(ctx context.Context, v *view, cands []partmap.Candidate, addr netip.AddrPort, r wire.Message, err error, now int64) (Result, string, step, error) {
	if err != nil {
		label, s := c.callFailed(ctx, err)
		if s == stepRetry {
			c.stats.leafFallbacks.Add(1)
			if errors.Is(err, context.DeadlineExceeded) {
				c.leafSkipUntil.Store(now + int64(c.cfg.FailBackoff))
				c.cfg.Logger.Debug("client leaf timed out; reading without it", "addr", addr, "backoff", c.cfg.FailBackoff)
			}
		}
		return Result{}, label, s, fmt.Errorf("client leaf at %s: %w", addr, err)
	}
	if r.Has(wire.FlagTelemetry) {
		c.table.Observe(routing.NodeID(r.NodeID), float64(r.Load), now)
	}
	if r.MapVersion > v.version {
		c.seen(r.MapVersion, false)
	}
	res := Result{Value: r.Value, Version: r.ValueVersion, Hit: r.Has(wire.FlagHit), Layer: -1}
	if r.Has(wire.FlagTelemetry) {
		res.Node = r.NodeID
		for _, cd := range cands {
			if cd.Switch && cd.Node == r.NodeID {
				res.Layer = cd.Layer
			}
		}
	}
	switch r.Status {
	case wire.StatusOK:
		if res.Hit && res.Layer >= 0 {
			c.countHit(v, res.Layer)
			return res, metrics.ResultHit, stepDone, nil
		}
		c.stats.misses.Add(1)
		return res, metrics.ResultMiss, stepDone, nil
	case wire.StatusNotFound:
		if res.Hit && res.Layer >= 0 {
			c.countHit(v, res.Layer)
		}
		return Result{}, metrics.StatusResult(r.Status), stepDone, ErrNotFound
	case wire.StatusNotOwner, wire.StatusUnavailable, wire.StatusOverloaded, wire.StatusInternal:
		c.stats.leafFallbacks.Add(1)
		c.cfg.Logger.Debug("read through the client leaf refused; reading without it", "addr", addr, "node", r.NodeID, "status", r.Status)
		return Result{}, metrics.StatusResult(r.Status), stepRetry, fmt.Errorf("client leaf at %s: %w", addr, statusError(r.Status))
	default: // TooLarge: the answer
		return Result{}, metrics.StatusResult(r.Status), stepDone, fmt.Errorf("client leaf at %s: %w", addr, statusError(r.Status))
	}
}
