package driver

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/distcache/distcache/client"
)

// maxLostExamples bounds Report.LostExamples.
const maxLostExamples = 5

// retryWorkers is the concurrency of the check's second pass over the keys
// whose reads failed in the first: low, so that a shim the first pass
// congested (an emulated server queues, and the transport's retransmissions
// add to its queue) answers them.
const retryWorkers = 4

// Sources of a read-back (LostWrite.Source).
const (
	sourceCache   = "cache"
	sourceStorage = "storage"
	// sourceTwemproxy reads mode twemproxy's keys through twemproxy.
	sourceTwemproxy = "twemproxy"
)

// checkResult gathers the read-back's findings from its workers.
type checkResult struct {
	mu       sync.Mutex // guards the fields below
	lost     int
	failed   []string // keys whose reads failed
	examples []LostWrite
}

// check reads every key with an acknowledged write back through a routed
// client and straight from storage, within CheckTimeout, and counts the keys
// whose value either way is not one the ledger accepts, pacing the reads
// to the bulk rate. Keys whose reads
// failed are read again in a second, gentler pass; those that fail again
// are unchecked (unless a read already showed them lost), and so is every
// key not reached in time.
func (r *runner) check(ctx context.Context) (checked, unchecked, lost int, examples []LostWrite) {
	keys := r.ledger.acknowledged()
	if h := r.cfg.hooks; h != nil && h.beforeCheck != nil {
		h.beforeCheck(ctx, keys)
	}
	r.log.Info("reading the written keys back", "keys", len(keys))
	cctx, cancel := context.WithTimeout(ctx, r.cfg.CheckTimeout)
	defer cancel()
	var res checkResult
	// A key costs its shim up to two units: the storage read, and the
	// routed read if it misses the caches.
	limit := r.bulkRate / 2
	done := r.parallel(cctx, "check", len(keys), r.cfg.Concurrency, limit, func(ctx context.Context, i int) {
		r.checkKey(ctx, keys[i], &res)
	})
	unchecked = len(keys) - done
	if retry := res.failed; len(retry) > 0 {
		r.log.Info("reading keys back again", "keys", len(retry))
		res.failed = nil
		done := r.parallel(cctx, "check", len(retry), retryWorkers, limit, func(ctx context.Context, i int) {
			r.checkKey(ctx, retry[i], &res)
		})
		unchecked += len(res.failed) + len(retry) - done
	}
	if unchecked > 0 {
		r.log.Warn("written keys not read back", "unchecked", unchecked, "of", len(keys))
	}
	if res.lost > 0 {
		r.log.Error("lost writes", "keys", res.lost, "of", len(keys)-unchecked)
	}
	slices.SortFunc(res.examples, func(a, b LostWrite) int { return strings.Compare(a.Key, b.Key) })
	if len(res.examples) > maxLostExamples {
		res.examples = res.examples[:maxLostExamples]
	}
	return len(keys) - unchecked, unchecked, res.lost, res.examples
}

// checkKey reads key back both ways and records in res whether it is lost,
// or failed to be read.
func (r *runner) checkKey(ctx context.Context, key string, res *checkResult) {
	e := r.ledger.entry(key)
	sources := []struct {
		name string
		c    Store
	}{{sourceCache, r.routed[0]}, {sourceStorage, r.bypass[0]}}
	if strings.HasPrefix(key, twemproxyPrefix) {
		// Twemproxy's keys are where its own hashing put them.
		sources = sources[:1]
		sources[0].name, sources[0].c = sourceTwemproxy, r.cfg.Twemproxy
	}
	var found []LostWrite
	failed := false
	for _, src := range sources {
		octx, cancel := context.WithTimeout(ctx, r.cfg.OpTimeout)
		got, err := src.c.Get(octx, key)
		cancel()
		switch {
		case err != nil && !errors.Is(err, client.ErrNotFound):
			failed = true
			r.log.Debug("cannot read a written key back", "key", key, "source", src.name, "err", err)
		case !e.accepts(got, err == nil):
			found = append(found, e.lost(key, got, err == nil, src.name))
		}
	}
	res.mu.Lock()
	defer res.mu.Unlock()
	switch {
	case len(found) > 0:
		res.lost++
		res.examples = append(res.examples, found[0])
	case failed:
		res.failed = append(res.failed, key)
	}
}
