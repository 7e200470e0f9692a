package checker

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/workload/history"
)

// finalReads are the final reads of one source.
type finalReads struct {
	mu     sync.Mutex // guards the fields below
	got    map[string]history.Observed
	unread []string
}

func newFinalReads() *finalReads { return &finalReads{got: map[string]history.Observed{}} }

func (f *finalReads) add(key string, o history.Observed, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		f.unread = append(f.unread, key)
		return
	}
	f.got[key] = o
}

// verdict checks the reads against the history ops.
func (f *finalReads) verdict(ops []history.Operation) ReadBack {
	f.mu.Lock()
	defer f.mu.Unlock()
	unread := slices.Clone(f.unread)
	slices.Sort(unread)
	return ReadBack{Read: len(f.got), Unread: unread, Lost: history.LostWrites(ops, f.got)}
}

// readBack reads every key through the cache (recorded in the history)
// and, when Redis addresses are known, straight from Redis; each read is
// retried until it gets an answer or ReadBackTimeout passes. direct is nil
// without Redis addresses.
func (c *Checker) readBack(ctx context.Context) (routed, direct *finalReads) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.ReadBackTimeout)
	defer cancel()
	routed = newFinalReads()
	c.forEachKey(func(key string) {
		o, err := retry(ctx, func() (history.Observed, error) {
			_, o, err := c.read(ctx, c.control, controlID, key)
			return o, err
		})
		routed.add(key, o, err)
	})
	if len(c.cfg.Redis) == 0 {
		return routed, nil
	}
	direct = newFinalReads()
	rdbs := map[string]*redis.Client{}
	for shard, addr := range c.cfg.Redis {
		rdbs[shard] = redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	}
	defer func() {
		for _, r := range rdbs {
			_ = r.Close()
		}
	}()
	p := c.control.Placement()
	c.forEachKey(func(key string) {
		r, s := p.Shard(key)
		rdb, ok := rdbs[p.Map().Storage.Racks[r].Shards[s].Name]
		if !ok {
			direct.add(key, history.Observed{}, errors.New("no Redis address for the key's shard"))
			return
		}
		o, err := retry(ctx, func() (history.Observed, error) {
			octx, cancel := context.WithTimeout(ctx, c.cfg.OpTimeout)
			defer cancel()
			v, err := rdb.Get(octx, key).Result()
			switch {
			case errors.Is(err, redis.Nil):
				return history.Observed{}, nil
			case err != nil:
				return history.Observed{}, err
			}
			return history.Observed{Value: v, Found: true}, nil
		})
		direct.add(key, o, err)
	})
	return routed, direct
}

// retry calls read until it succeeds or ctx ends, pausing between calls.
func retry(ctx context.Context, read func() (history.Observed, error)) (history.Observed, error) {
	for {
		o, err := read()
		if err == nil {
			return o, nil
		}
		if perr := pause(ctx); perr != nil {
			return o, errors.Join(err, perr)
		}
	}
}

// forEachKey calls fn for every key, on up to Workers goroutines.
func (c *Checker) forEachKey(fn func(key string)) {
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range min(c.cfg.Workers, len(c.keys)) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < len(c.keys); i = int(next.Add(1)) - 1 {
				fn(c.keys[i])
			}
		})
	}
	wg.Wait()
}
