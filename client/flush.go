package client

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/distcache/distcache/dataplane/heldkeys"
	"github.com/distcache/distcache/dataplane/redisbatch"
)

// flushStepScript is one step of a shard's flush: it scans the keys at
// Redis' cursor ARGV[1] (COUNT ARGV[2]) and deletes, with ARGV[4] (DEL or
// UNLINK), each that neither starts with ARGV[3] (OwnPrefix) nor is in
// KEYS[1] (heldkeys.Key, the keys a cache may hold). It answers the next
// cursor and the keys of the step that are in KEYS[1], not deleted.
//
// Each key is checked and deleted atomically, as a direct write is
// (package heldkeys): a key no cache may hold has no copy, and no read
// for a cache that started before the delete hands a node its value
// after it. A step that runs twice, after a broken connection, deletes
// nothing more.
var flushStepScript = redis.NewScript(`
local r = redis.call('SCAN', ARGV[1], 'COUNT', ARGV[2])
local held = {}
for _, k in ipairs(r[2]) do
  if string.sub(k, 1, #ARGV[3]) ~= ARGV[3] then
    if redis.call('SISMEMBER', KEYS[1], k) == 1 then
      held[#held+1] = k
    else
      redis.call(ARGV[4], k)
    end
  end
end
return {r[1], held}
`)

// flushStepCount is the COUNT of a flush step: a step holds Redis for
// about as long as a thousand DELs, well within a direct connection's
// timeout.
const flushStepCount = 1000

// flushWorkers bounds the deletes of cached keys in flight at once.
const flushWorkers = 32

// FlushAll deletes every key of every shard but the cluster's own,
// coherently with the caches. Each shard's keys are scanned in steps
// (flushStepScript): a key no cache may hold is deleted by the step, in
// Redis; one a cache may hold is deleted afterwards through its shim
// (Remove), which invalidates every cached copy first. async deletes with
// UNLINK, which frees large values in the background, instead of DEL.
//
// It is not atomic across keys, as Redis' FLUSHALL is: a key written while
// it runs may stay, and a read while it runs may see some keys deleted
// and others not yet. Every key that exists from its start to its end is
// deleted, and no reader sees a deleted key's value after FlushAll
// returns.
func (c *Client) FlushAll(ctx context.Context, async bool) error {
	shards, err := c.storageOrErr("flush the keys")
	if err != nil {
		return err
	}
	del := "DEL"
	if async {
		del = "UNLINK"
	}
	held := make([][]string, len(shards))
	err = onEveryShard(ctx, shards, func(ctx context.Context, sh int, b *redisbatch.Batcher) error {
		var err error
		held[sh], err = flushShard(ctx, b, del)
		return err
	})
	if err != nil {
		return fmt.Errorf("cannot flush the keys: %w", err)
	}
	var eg errgroup.Group
	eg.SetLimit(flushWorkers)
	for _, keys := range held {
		for _, k := range keys {
			eg.Go(func() error {
				_, err := c.Remove(ctx, k)
				return err
			})
		}
	}
	if err := eg.Wait(); err != nil {
		return fmt.Errorf("cannot flush the keys a cache may hold: %w", err)
	}
	return nil
}

// flushShard runs the steps of b's flush until its scan ends and returns
// the keys a cache may hold, each once.
func flushShard(ctx context.Context, b *redisbatch.Batcher, del string) ([]string, error) {
	seen := map[string]bool{}
	var held []string
	for cursor := "0"; ; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r, err := eval(ctx, b, flushStepScript, []string{heldkeys.Key}, cursor, flushStepCount, OwnPrefix, del)
		if err != nil {
			return nil, err
		}
		pair, ok := r.([]any)
		if !ok || len(pair) != 2 {
			return nil, fmt.Errorf("the script answered %v: %w", r, ErrInternal)
		}
		keys, err := stringsOf(pair[1])
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			if !seen[k] {
				seen[k] = true
				held = append(held, k)
			}
		}
		if cursor, ok = pair[0].(string); !ok {
			return nil, fmt.Errorf("the script answered a cursor of %T: %w", pair[0], ErrInternal)
		}
		if cursor == "0" {
			return held, nil
		}
	}
}
