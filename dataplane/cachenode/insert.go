package cachenode

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/hotkey"
)

// InsertResult counts the outcome of one insertion interval.
type InsertResult struct {
	Inserted  int // new keys cached: placeholders filled
	Refreshed int // invalid entries filled again
	Evicted   int // entries evicted by the plan
	Failed    int // FETCHes that failed (not found, error, timeout, over CapacityBytes)
	Stale     int // fills not applied: the entry was invalidated by a later write or replaced
}

// fetchJob is one FETCH of an insertion interval: for a new placeholder, or
// to refresh an invalid entry.
type fetchJob struct {
	key     string
	e       *entry
	v       *view
	refresh bool
}

type fetchOutcome uint8

const (
	fetchFilled fetchOutcome = iota
	fetchStale
	fetchFailed
)

var errNoShim = errors.New("no shim address for the key's storage shard")

// loop runs an insertion interval every Config.Interval until Close. The
// first one comes after a random part of an interval, so nodes started
// together (a standalone cluster, a rollout) do not all evict and fetch in
// the same instant: each interval's misses and FETCHes would reach the
// shims as one burst. After a map change (Node.remapped) the next interval
// comes between a quarter and half an interval later instead: keys the
// change gave the node are cold, and every read of them goes to storage
// until an interval inserts them.
func (n *Node) loop() {
	t := time.NewTimer(rand.N(n.cfg.Interval))
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-n.remapped:
			t.Reset(earlyInterval(n.cfg.Interval))
			continue
		case <-t.C:
		}
		t.Reset(n.cfg.Interval)
		if r := n.InsertHot(n.ctx); r != (InsertResult{}) {
			n.log.Debug("insertion interval", "inserted", r.Inserted, "refreshed", r.Refreshed,
				"evicted", r.Evicted, "failed", r.Failed, "stale", r.Stale)
		}
	}
}

// earlyInterval is how long after a map change the next insertion interval
// comes: long enough for the detector to count the misses of the keys the
// change moved, random so that the nodes that installed the change together
// do not fetch together.
func earlyInterval(interval time.Duration) time.Duration {
	return interval/4 + rand.N(interval/4+1)
}

// InsertHot runs one insertion interval synchronously (NetCache §4.4,
// DistCache §4.3): it plans the interval with the hot-key detector, evicts
// the planned victims, adds a placeholder for every planned key this node
// still owns and is not cached, fetches those and the invalid entries from
// their shims (at most 64 at a time), applies the fills by the coherence
// rules and returns when every FETCH has ended. The FETCHes end early when
// ctx ends or the node closes. With Config.ShimLeases, the keys of shims
// that never granted the node a lease wait for a renewal round first
// (shimlease.go).
func (n *Node) InsertHot(ctx context.Context) InsertResult {
	jobs, deferred, res := n.plan()
	if len(deferred) > 0 {
		n.renewShims()
		jobs = n.placeholders(deferred, jobs)
	}
	if len(jobs) == 0 {
		return res
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(n.ctx, cancel)()
	outcomes := make([]fetchOutcome, len(jobs))
	sem := make(chan struct{}, fetchParallelism)
	var wg sync.WaitGroup
	for i := range jobs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			outcomes[i] = n.fetch(ctx, &jobs[i])
		})
	}
	wg.Wait()
	for i, o := range outcomes {
		switch {
		case o == fetchFilled && jobs[i].refresh:
			res.Refreshed++
		case o == fetchFilled:
			res.Inserted++
		case o == fetchStale:
			res.Stale++
		default:
			res.Failed++
		}
	}
	return res
}

// plan applies the detector's decision for the interval: evictions, then
// placeholders for the keys to insert (under mapMu, so each is owned under
// the current map), and returns the FETCHes to make and the keys whose
// shim must grant a lease first.
func (n *Node) plan() ([]fetchJob, []string, InsertResult) {
	n.insertMu.Lock()
	defer n.insertMu.Unlock()
	var res InsertResult
	d := n.det.Plan(n.capacity())
	n.recordHits(d.Hits)
	for _, k := range d.Evict {
		if n.store.remove(k) {
			res.Evicted++
			n.stats.evictions.Add(1)
		}
		n.det.Untrack(k)
	}

	n.mapMu.Lock()
	defer n.mapMu.Unlock()
	v := n.view.Load()
	if v == nil || !v.active {
		return nil, nil, res
	}
	jobs, deferred := n.placeholdersLocked(v, d.Insert, nil, true)
	for _, r := range n.store.stale(v.owns) {
		jobs = append(jobs, fetchJob{key: r.key, e: r.e, v: v, refresh: true})
	}
	return jobs, deferred, res
}

// placeholders adds the placeholders of keys (placeholdersLocked) under
// mapMu.
func (n *Node) placeholders(keys []string, jobs []fetchJob) []fetchJob {
	n.mapMu.Lock()
	defer n.mapMu.Unlock()
	v := n.view.Load()
	if v == nil || !v.active {
		return jobs
	}
	jobs, _ = n.placeholdersLocked(v, keys, jobs, false)
	return jobs
}

// placeholdersLocked adds a placeholder for every key of keys that v
// gives the node, whose shim granted it a lease and that has no entry,
// and appends its FETCH to jobs. It returns the keys left out for want
// of their shim's lease; with want, the next renewal round asks for it
// (granted). The caller holds mapMu.
func (n *Node) placeholdersLocked(v *view, keys []string, jobs []fetchJob, want bool) ([]fetchJob, []string) {
	var deferred []string
	for _, k := range keys {
		if !v.owns(k) {
			continue // the map moved the key since its misses were counted
		}
		shim := int32(v.p.ShardIndex(k))
		if !n.granted(shim, want) {
			deferred = append(deferred, k) // inserted once its shim granted a lease (shimlease.go)
			continue
		}
		e, ok := n.store.addPlaceholder(k, shim)
		if !ok {
			continue
		}
		n.det.Track(k)
		n.stats.inserts.Add(1)
		jobs = append(jobs, fetchJob{key: k, e: e, v: v})
	}
	return jobs, deferred
}

// recordHits keeps the hits of the interval that ends, for HotKeys to
// report when asked. The caller holds insertMu.
func (n *Node) recordHits(hits []hotkey.KeyHits) {
	now := time.Now()
	n.hot.Store(&intervalHits{seconds: now.Sub(n.lastPlan).Seconds(), hits: hits})
	n.lastPlan = now
}

// fetch sends FETCH for j's key to its shim and applies the reply to j's
// entry. A failed FETCH removes the entry if it is still the same invalid
// one.
func (n *Node) fetch(ctx context.Context, j *fetchJob) fetchOutcome {
	var rep wire.Message
	err := errNoShim
	if dst, ok := j.v.shim(j.key); ok {
		cctx, cancel := context.WithTimeout(ctx, n.cfg.BackendTimeout)
		req := wire.Message{Header: wire.Header{Op: wire.OpFetch, MapVersion: j.v.version}, Key: []byte(j.key)}
		rep, err = n.ep.Call(cctx, dst, &req)
		cancel()
	}
	switch {
	case err != nil:
		n.stats.backendErrors.Add(1)
		n.log.Debug("cannot fetch key", "key", j.key, "err", err)
		return n.fetchFailed(j)
	case rep.Status == wire.StatusNotFound && rep.ValueVersion > 0:
		// Not in storage at the shim's counter: a negative entry. A shim
		// of a version before them sends no counter with StatusNotFound.
		n.stats.negativeFills.Add(1)
	case rep.Status != wire.StatusOK:
		n.log.Debug("fetch refused by shim", "key", j.key, "status", rep.Status)
		return n.fetchFailed(j)
	}
	if !n.shimCurrent(j.v, j.key, &rep.Header) {
		return n.fetchFailed(j) // sent in an epoch the node left, or before the one it holds
	}
	switch n.store.fill(j.key, j.e, rep.ValueVersion, rep.Value, rep.Status == wire.StatusNotFound) {
	case fillApplied:
		n.stats.fills.Add(1)
		return fetchFilled
	case fillStale:
		n.stats.fillsIgnored.Add(1)
		return fetchStale
	default: // fillRefused: the entry is gone
		n.stats.fillsFailed.Add(1)
		n.stats.fillsRefused.Add(1)
		n.det.Untrack(j.key)
		n.log.Debug("refused fill over the byte capacity", "key", j.key,
			"bytes", len(rep.Value), "capacity_bytes", n.cfg.CapacityBytes)
		return fetchFailed
	}
}

// fetchFailed removes j's entry if it is still the same invalid entry.
func (n *Node) fetchFailed(j *fetchJob) fetchOutcome {
	n.stats.fillsFailed.Add(1)
	if n.store.removeIf(j.key, j.e) {
		n.det.Untrack(j.key)
	}
	return fetchFailed
}

// hotKeysReported bounds the keys HotKeys reports: as many as the control
// loop considers (redundancy.DefaultMaxKeys).
const hotKeysReported = 1024

// intervalHits is the hits of the cached keys in one insertion interval
// (hotkey.Decision.Hits, most hit first) and its length.
type intervalHits struct {
	seconds float64
	hits    []hotkey.KeyHits
}

// HotKeys is the hits of the keys the node cached in the insertion loop's
// last complete interval, most hit first, at most hotKeysReported of them,
// as GET /hotkeys answers them.
func (n *Node) HotKeys() metrics.HotKeys {
	h := n.hot.Load()
	if h == nil {
		return metrics.HotKeys{}
	}
	out := metrics.HotKeys{Interval: h.seconds, Keys: make([]metrics.KeyCount, 0, min(len(h.hits), hotKeysReported))}
	for _, kh := range h.hits[:min(len(h.hits), hotKeysReported)] {
		out.Keys = append(out.Keys, metrics.KeyCount{Key: []byte(kh.Key), Reads: kh.Hits})
	}
	return out
}
