package client

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/routing"
)

// Result is a read's value and where it came from.
type Result struct {
	Value []byte
	// Version is the value's version (coherence, DistCache §4.3) as the
	// replier reported it.
	Version uint64
	// Hit reports that a cache node served its cached copy.
	Hit bool
	// Node is the id of the cache node that answered (0 if the shim
	// answered directly; tell the two apart by Layer).
	Node uint32
	// Layer is the answering node's layer index, -1 for the shim.
	Layer int
}

// maxInline is the number of layers routed without allocating.
const maxInline = 8

// Get returns key's value. A missing key is ErrNotFound.
func (c *Client) Get(ctx context.Context, key string) ([]byte, error) {
	r, err := c.GetResult(ctx, key)
	return r.Value, err
}

// GetResult reads key: from the least loaded of its cache candidates
// (power-of-k-choices over piggybacked loads, DistCache §4.2), trying
// another candidate on a timeout or a refusal, and from storage (the key's
// shim, or its Redis, storage.go) when no candidate is left or the node
// that has no copy leaves the read to the client; Config.Attempts bounds
// the requests sent. With Config.Bypass every attempt goes to storage. A missing key is
// ErrNotFound itself (unwrapped), never retried.
func (c *Client) GetResult(ctx context.Context, key string) (Result, error) {
	start := time.Now()
	c.stats.gets.Add(1)
	res, label, err := c.get(ctx, key)
	return c.settle(key, time.Since(start), res, label, err)
}

// settle accounts for a read of key that started at start and ended with
// res, label and err, and returns GetResult's results.
func (c *Client) settle(key string, took time.Duration, res Result, label string, err error) (Result, error) {
	c.requests.Observe(wire.OpGet, label, took)
	if err != nil {
		if errors.Is(err, ErrNotFound) { // an answer, as common as a value: returned bare, not formatted
			c.stats.notFound.Add(1)
			return Result{Layer: -1}, ErrNotFound
		}
		c.stats.errors.Add(1)
		return Result{Layer: -1}, fmt.Errorf("cannot get %q: %w", key, err)
	}
	return res, nil
}

// step is what one read attempt decided.
type step int

const (
	stepDone    step = iota // answered (value or final error)
	stepRetry               // try another candidate or the shim
	stepRefresh             // the map changed under the read: route it again
	stepStorage             // no copy: read storage directly (storage.go)
)

// get runs the read attempts; label is the metrics result. A read tries
// the key's candidates, the least loaded first, and then its storage shim:
// a round. When every one of them failed, it starts another round after a
// pause (RoundPause, doubling each round up to 8 times) — a node that
// timed out is skipped for FailBackoff, so the next round goes to the
// others — until ctx ends, or, when ctx has no deadline, until it has sent
// Config.Attempts requests. So a read outlives a shim's restart or a
// Redis server's that ends before its deadline, as a Redis client's
// retries would, instead of failing after a few quick refusals. With a
// client leaf (Config.ClientLeaf), the first attempt goes through it, and
// the client's own choice follows only if the leaf's fails
// (clientleaf.go). A node that refuses the read because
// its map is newer than the client's makes the client refresh its map
// (Config.Maps) and route the read again, once per read, without counting
// the refusal as an attempt.
func (c *Client) get(ctx context.Context, key string) (res Result, label string, err error) {
	return c.read(ctx, key, true)
}

// read is get, whose first attempt goes through the client leaf when
// viaLeaf and the key may (clientleaf.go).
func (c *Client) read(ctx context.Context, key string, viaLeaf bool) (res Result, label string, err error) {
	if err := checkKey(key); err != nil {
		return res, metrics.StatusResult(wire.StatusTooLarge), err
	}
	v := c.view.Load()
	kb := []byte(key)
	if c.cold(v, key, c.now()) {
		res, label, s, err := c.readStorage(ctx, v, key, kb)
		if s == stepDone {
			return res, label, err
		}
	}
	var buf [maxInline]partmap.Candidate
	cands := v.p.Candidates(key, buf[:0])
	var (
		tried     uint64 // bit i: cands[i] was tried in this round
		shimTried bool   // the shim was tried in this round
		round     int
		refreshed bool
	)
	label, err = metrics.ResultTimeout, errors.New("no attempt made")
	_, bounded := ctx.Deadline()
	attempt := 0
	if viaLeaf {
		if leaf, ok := c.leafFor(v, key, cands, c.now()); ok {
			attempt++
			var s step
			if res, label, s, err = c.readLeaf(ctx, v, cands, leaf, kb); s == stepDone {
				return res, label, err
			}
		}
	}
	for ; attempt < c.cfg.Attempts || bounded; attempt++ {
		if cerr := ctx.Err(); cerr != nil {
			return res, metrics.ResultTimeout, expired(attempt, cerr, err)
		}
		i := -1 // the shim
		if !c.cfg.Bypass {
			i = c.choose(v, cands, tried, c.now())
		}
		if i < 0 && shimTried { // every candidate and the shim failed: a new round
			round++
			if cerr := c.pause(ctx, round); cerr != nil {
				return res, metrics.ResultTimeout, expired(attempt, cerr, err)
			}
			tried, shimTried = 0, false
			if !c.cfg.Bypass {
				i = c.choose(v, cands, tried, c.now())
			}
		}
		if attempt > 0 {
			c.stats.retries.Add(1)
		}
		var s step
		if i >= 0 {
			res, label, s, err = c.readNode(ctx, v, cands, i, &tried, kb, !refreshed)
			if s == stepStorage {
				res, label, s, err = c.readStorage(ctx, v, key, kb)
			}
		} else {
			shimTried = true
			res, label, s, err = c.readStorageOrShim(ctx, v, key, kb)
		}
		switch s {
		case stepDone:
			return res, label, err
		case stepRefresh:
			refreshed = true
			attempt--
			v = c.view.Load()
			cands, tried = v.p.Candidates(key, buf[:0]), 0
		}
	}
	return res, label, fmt.Errorf("%d attempts failed, last: %w", attempt, err)
}

// expired is the error of a read whose context ended (cause) after
// attempts requests, the last of which failed with last.
func expired(attempts int, cause, last error) error {
	if attempts == 0 {
		return cause
	}
	return fmt.Errorf("%d attempts failed before the read's deadline: %w, last: %w", attempts, cause, last)
}

// pause waits before round (1 for the second): RoundPause doubled for each
// round after the second, at most 8 times RoundPause, or until ctx ends.
func (c *Client) pause(ctx context.Context, round int) error {
	d := c.cfg.RoundPause << min(round-1, 3)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// choose returns the index in cands of the candidate to read from: the least
// loaded of those not tried yet, with a known address and not in
// FailBackoff; -1 if there is none.
func (c *Client) choose(v *view, cands []partmap.Candidate, tried uint64, now int64) int {
	var rbuf [maxInline]routing.Candidate
	var ibuf [maxInline]int
	rc, idx := rbuf[:0], ibuf[:0]
	for i, cd := range cands {
		if i >= 64 {
			break // tried is a 64-bit set; no real map has more layers
		}
		if tried&(1<<i) != 0 || cd.Fenced || !v.addrs.Member(cd.Layer, cd.Member).IsValid() || c.inBackoff(routing.NodeID(cd.Node), now) {
			continue
		}
		rc = append(rc, routing.Candidate{Node: routing.NodeID(cd.Node), Capacity: cd.Capacity, Remote: v.isRemote(cd)})
		idx = append(idx, i)
	}
	if len(rc) == 0 {
		return -1
	}
	r := c.routers.Get().(*routing.Router)
	ties := r.Stats().Ties
	j := r.Choose(rc, now)
	if r.Stats().Ties != ties {
		c.stats.ties.Add(1)
	}
	c.routers.Put(r)
	if j < 0 {
		return -1 // every candidate was marked failed meanwhile
	}
	if rc[j].Remote {
		c.stats.crossZone.Add(1)
	}
	return idx[j]
}

// getFromNode is one GET attempt at cache candidate cd, with flags (a
// hedge's wire.FlagCacheOnly). A reply from a
// node with a newer map starts a refresh of the client's; when the node
// refused the read for it and mayRefresh, the read waits for the refresh
// and is routed again (stepRefresh).
func (c *Client) getFromNode(ctx context.Context, v *view, cd partmap.Candidate, kb []byte, mayRefresh bool, flags wire.Flag) (Result, string, step, error) {
	addr, m, sent := c.nodeRequest(v, cd, kb, flags, c.now())
	r, err := c.call(ctx, addr, &m)
	return c.nodeAnswered(ctx, v, cd, sent, r, err, mayRefresh, c.now())
}

// readAddr is where a GET of cd's key goes: the member's address, or a
// switch member's read port for the key's shard.
func (v *view) readAddr(cd partmap.Candidate) netip.AddrPort {
	a := v.addrs.Member(cd.Layer, cd.Member)
	if cd.Switch && a.IsValid() {
		a = netip.AddrPortFrom(a.Addr(), partmap.SwitchReadPort(a.Port(), cd.Shard))
	}
	return a
}

// nodeRequest is a GET attempt at cache candidate cd, with flags: its
// address and message, recorded in the load table as sent now (the
// client's clock).
func (c *Client) nodeRequest(v *view, cd partmap.Candidate, kb []byte, flags wire.Flag, now int64) (netip.AddrPort, wire.Message, int64) {
	c.table.Sent(routing.NodeID(cd.Node), now)
	if flags == 0 && v.storage != nil && !cd.Switch {
		flags = wire.FlagDirect // a miss is read from Redis here (storage.go)
	}
	return v.readAddr(cd),
		wire.Message{Header: wire.Header{Op: wire.OpGet, Flags: flags, MapVersion: v.version}, Key: kb}, now
}

// nodeAnswered is the outcome of a GET attempt at cache candidate cd sent
// at sent: its reply r, or the error that ended the wait, at now (the
// client's clock).
func (c *Client) nodeAnswered(ctx context.Context, v *view, cd partmap.Candidate, sent int64, r wire.Message, err error, mayRefresh bool, now int64) (Result, string, step, error) {
	addr := v.readAddr(cd)
	node := routing.NodeID(cd.Node)
	if err != nil {
		if errors.Is(context.Cause(ctx), errWentElsewhere) {
			c.abandonLater(node, sent)
		} else {
			c.table.Abandoned(node)
		}
		label, s := c.callFailed(ctx, err)
		if s == stepRetry && errors.Is(err, context.DeadlineExceeded) {
			c.markFailed(node)
			c.cfg.Logger.Debug("cache node timed out; skipping it", "node", cd.Node, "addr", addr,
				"layer", cd.Layer, "backoff", c.cfg.FailBackoff)
		}
		return Result{}, label, s, fmt.Errorf("node %d at %s: %w", cd.Node, addr, err)
	}
	c.table.Answered(node, sent)
	if r.Has(wire.FlagTelemetry) {
		c.table.Observe(routing.NodeID(r.NodeID), float64(r.Load), now)
	}
	if r.MapVersion > v.version {
		wait := mayRefresh && r.Status == wire.StatusNotOwner
		if c.seen(r.MapVersion, wait) && wait {
			c.cfg.Logger.Debug("cache node has a newer map; routing the read again", "node", cd.Node,
				"addr", addr, "map_version", r.MapVersion)
			return Result{}, metrics.StatusResult(r.Status), stepRefresh, fmt.Errorf("node %d at %s: %w", cd.Node, addr, statusError(r.Status))
		}
	}
	switch r.Status {
	case wire.StatusOK:
		res := Result{Value: r.Value, Version: r.ValueVersion, Hit: r.Has(wire.FlagHit), Node: cd.Node, Layer: cd.Layer}
		if !res.Hit {
			c.stats.misses.Add(1)
			return res, metrics.ResultMiss, stepDone, nil
		}
		c.countHit(v, cd.Layer)
		return res, metrics.ResultHit, stepDone, nil
	case wire.StatusNotOwner, wire.StatusUnavailable, wire.StatusOverloaded, wire.StatusInternal:
		if r.Status == wire.StatusUnavailable && r.Has(wire.FlagDirect) && v.storage != nil {
			return Result{}, metrics.ResultMiss, stepStorage, nil // no copy: read storage here
		}
		c.cfg.Logger.Debug("cache node refused a read; trying another", "node", cd.Node, "addr", addr, "status", r.Status)
		return Result{}, metrics.StatusResult(r.Status), stepRetry,
			fmt.Errorf("node %d at %s: %w", cd.Node, addr, statusError(r.Status))
	case wire.StatusNotFound: // the answer, as common as a value: no error to format
		if r.Has(wire.FlagHit) { // a negative entry: the node's copy of the key's absence
			c.countHit(v, cd.Layer)
		}
		return Result{}, metrics.StatusResult(r.Status), stepDone, ErrNotFound
	default: // TooLarge: the answer
		return Result{}, metrics.StatusResult(r.Status), stepDone,
			fmt.Errorf("node %d at %s: %w", cd.Node, addr, statusError(r.Status))
	}
}

// getDirect is one GET attempt at key's storage shim, bypassing the caches.
func (c *Client) getDirect(ctx context.Context, v *view, key string, kb []byte) (Result, string, step, error) {
	addr, m, err := c.directRequest(ctx, v, key, kb)
	if err != nil {
		return Result{}, metrics.StatusResult(wire.StatusInternal), stepDone, err
	}
	r, err := c.call(ctx, addr, &m)
	return c.directAnswered(ctx, v, addr, r, err)
}

// directRequest is a GET attempt at key's storage shim: its address and
// message, counted as a direct read.
func (c *Client) directRequest(ctx context.Context, v *view, key string, kb []byte) (netip.AddrPort, wire.Message, error) {
	addr, err := c.shardAddr(ctx, v, key)
	if err != nil {
		return addr, wire.Message{}, err
	}
	c.stats.directReads.Add(1)
	return addr, wire.Message{Header: wire.Header{Op: wire.OpGet, Flags: wire.FlagDirect, MapVersion: v.version}, Key: kb}, nil
}

// directAnswered is the outcome of a GET attempt at the storage shim at
// addr: its reply r, or the error that ended the wait.
func (c *Client) directAnswered(ctx context.Context, v *view, addr netip.AddrPort, r wire.Message, err error) (Result, string, step, error) {
	if err != nil {
		label, s := c.callFailed(ctx, err)
		return Result{}, label, s, fmt.Errorf("shim at %s: %w", addr, err)
	}
	if r.MapVersion > v.version {
		c.seen(r.MapVersion, false)
	}
	switch r.Status {
	case wire.StatusOK:
		c.stats.misses.Add(1)
		return Result{Value: r.Value, Version: r.ValueVersion, Layer: -1}, metrics.ResultMiss, stepDone, nil
	case wire.StatusUnavailable, wire.StatusOverloaded, wire.StatusInternal, wire.StatusNotOwner:
		return Result{}, metrics.StatusResult(r.Status), stepRetry,
			fmt.Errorf("shim at %s: %w", addr, statusError(r.Status))
	case wire.StatusNotFound:
		return Result{}, metrics.StatusResult(r.Status), stepDone, ErrNotFound
	default:
		return Result{}, metrics.StatusResult(r.Status), stepDone,
			fmt.Errorf("shim at %s: %w", addr, statusError(r.Status))
	}
}

// call sends a read request with a per-attempt deadline: the earlier of
// AttemptTimeout and the caller's deadline. Reads are idempotent, so a new
// attempt may use a new sequence number.
func (c *Client) call(ctx context.Context, addr netip.AddrPort, m *wire.Message) (wire.Message, error) {
	return c.ep.CallUntil(ctx, time.Now().Add(c.cfg.AttemptTimeout), addr, m)
}

// callFailed classifies a failed attempt: the caller's context ended or the
// client is closed (done), or the attempt timed out or could not be sent
// (retry elsewhere).
func (c *Client) callFailed(ctx context.Context, err error) (string, step) {
	switch {
	case ctx.Err() != nil:
		return metrics.ResultTimeout, stepDone
	case errors.Is(err, transport.ErrClosed):
		return metrics.StatusResult(wire.StatusInternal), stepDone
	case errors.Is(err, context.DeadlineExceeded):
		c.stats.timeouts.Add(1)
		return metrics.ResultTimeout, stepRetry
	default:
		return metrics.StatusResult(wire.StatusInternal), stepRetry
	}
}

// inBackoff reports whether node is skipped after a timeout. An expired
// mark is cleared here, so the node is probed by this read if chosen.
func (c *Client) inBackoff(node routing.NodeID, now int64) bool {
	if !c.table.Failed(node) {
		return false // hot path: no lock
	}
	c.backoffMu.Lock()
	defer c.backoffMu.Unlock()
	if until, ok := c.backoff[node]; ok && now < until {
		return true
	}
	delete(c.backoff, node)
	c.table.MarkFailed(node, false)
	return false
}

// markFailed skips node for FailBackoff.
func (c *Client) markFailed(node routing.NodeID) {
	until := c.now() + int64(c.cfg.FailBackoff)
	c.backoffMu.Lock()
	defer c.backoffMu.Unlock()
	c.backoff[node] = until
	c.table.MarkFailed(node, true)
}

// countHit counts a read answered from a cached copy at layer.
func (c *Client) countHit(v *view, layer int) {
	c.stats.hits.Add(1)
	if layer < len(v.hits) {
		v.hits[layer].n.Add(1)
		v.hits[layer].metric.Inc()
	}
}
