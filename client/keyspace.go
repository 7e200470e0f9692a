package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/distcache/distcache/dataplane/heldkeys"
	"github.com/distcache/distcache/dataplane/redisbatch"
)

// The whole keyspace: DBSize, Keys, Scan, RandomKey and FlushAll run on
// every shard's Redis, where the client reaches them itself
// (spec.dataPlane.directReads); otherwise they fail with
// ErrNoStorageAccess. The cluster's own keys, those starting with
// OwnPrefix (the set of keys a cache may hold, heldkeys.Key, and the
// shims' marks of applied writes, shim.AppliedPrefix), are hidden from
// each, and never deleted.

// OwnPrefix starts every key that the cluster keeps for itself in a
// shard's Redis. Keys of the store must not start with it.
const OwnPrefix = "distcache:"

// IsOwnKey says whether key is one of the cluster's own (OwnPrefix).
func IsOwnKey(key string) bool { return strings.HasPrefix(key, OwnPrefix) }

// walkStepCount is the COUNT of a step of a walk over a shard's keys
// (DBSize, Keys): a step holds Redis for a few milliseconds, so a walk
// over millions of keys neither blocks the shard nor outlasts a direct
// connection's timeout, as one KEYS would.
const walkStepCount = 10000

// smallShard is the most keys a shard may have for DBSize to count its
// own keys in one script: a SCAN of them holds Redis for about 10 ms
// (half a microsecond a key, measured 2026-12-06 on a 2-core VM).
var smallShard = 20000 // a variable for the tests of the walk

// countScript answers a shard's DBSIZE less the cluster's own keys.
// Where DBSIZE is at most ARGV[1] it scans the shard for them (ARGV[2] is
// OwnPrefix), so the count is of one moment: own keys come and go all
// the time (the marks of applied writes expire; the set of keys a cache
// may hold is made by a cache's fill, in the background, and goes when
// emptied). SCAN can return a key twice, so each is counted once; SCAN
// deletes the expired ones it meets, so DBSIZE counts none of them.
// Otherwise it subtracts the own keys among KEYS that exist (those a walk
// found, and heldkeys.Key); EXISTS deletes them if they expired. It
// answers nil when ARGV[1] is 0 and the shard is not empty.
var countScript = redis.NewScript(`
if redis.call('DBSIZE') <= tonumber(ARGV[1]) then
  local seen, own, cursor = {}, 0, '0'
  repeat
    local r = redis.call('SCAN', cursor, 'MATCH', ARGV[2] .. '*', 'COUNT', 1000)
    cursor = r[1]
    for _, k in ipairs(r[2]) do
      if not seen[k] then seen[k] = true; own = own + 1 end
    end
  until cursor == '0'
  return redis.call('DBSIZE') - own
end
if #KEYS == 0 then return false end
local own = 0
for _, k in ipairs(KEYS) do own = own + redis.call('EXISTS', k) end
return redis.call('DBSIZE') - own
`)

// randomKeyScript answers a random key of a shard that does not start
// with ARGV[1] (OwnPrefix), or nil, and the shard's DBSIZE. RANDOMKEY
// tries a few times; a shard of mostly own keys is then scanned for one.
var randomKeyScript = redis.NewScript(`
local n = redis.call('DBSIZE')
for i = 1, 16 do
  local k = redis.call('RANDOMKEY')
  if not k then return {false, n} end
  if string.sub(k, 1, #ARGV[1]) ~= ARGV[1] then return {k, n} end
end
local cursor = '0'
repeat
  local r = redis.call('SCAN', cursor, 'COUNT', 100)
  cursor = r[1]
  for _, k in ipairs(r[2]) do
    if string.sub(k, 1, #ARGV[1]) ~= ARGV[1] then return {k, n} end
  end
until cursor == '0'
return {false, n}
`)

// storageOrErr is v's batcher per shard, or ErrNoStorageAccess.
func (c *Client) storageOrErr(what string) ([]*redisbatch.Batcher, error) {
	v := c.view.Load()
	if v.storage == nil {
		return nil, fmt.Errorf("cannot %s: %w", what, ErrNoStorageAccess)
	}
	return v.storage, nil
}

// onEveryShard runs fn for every shard at once and returns the first
// error, naming its shard; the first error ends the others' context.
func onEveryShard(ctx context.Context, shards []*redisbatch.Batcher, fn func(ctx context.Context, sh int, b *redisbatch.Batcher) error) error {
	eg, ctx := errgroup.WithContext(ctx)
	for sh, b := range shards {
		eg.Go(func() error {
			if err := fn(ctx, sh, b); err != nil {
				return fmt.Errorf("shard %d: %w", sh, err)
			}
			return nil
		})
	}
	return eg.Wait()
}

// eval runs script on b with keys and args.
func eval(ctx context.Context, b *redisbatch.Batcher, script *redis.Script, keys []string, args ...any) (any, error) {
	r, err := b.Eval(ctx, script, keys, args...)
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("redis: %w", err)
	}
	return r, nil
}

// DBSize counts the keys of every shard but the cluster's own. A shard
// of at most smallShard keys counts them in one script (countScript): the
// count is of one moment. A larger one is walked in steps for its own
// keys first, which are then subtracted from DBSIZE if they still exist,
// in one script: at rest the count is exact, but a mark of a write that
// ran during the walk may be counted as a key.
func (c *Client) DBSize(ctx context.Context) (int64, error) {
	shards, err := c.storageOrErr("count the keys")
	if err != nil {
		return 0, err
	}
	counts := make([]int64, len(shards))
	err = onEveryShard(ctx, shards, func(ctx context.Context, sh int, b *redisbatch.Batcher) error {
		r, err := eval(ctx, b, countScript, nil, smallShard, OwnPrefix)
		if err == nil && r == nil { // a large shard
			var own []string
			if own, err = walkShard(ctx, b, OwnPrefix+"*"); err != nil {
				return err
			}
			if !slices.Contains(own, heldkeys.Key) {
				own = append(own, heldkeys.Key)
			}
			r, err = eval(ctx, b, countScript, own, 0, OwnPrefix)
		}
		if err != nil {
			return err
		}
		n, ok := r.(int64)
		if !ok {
			return fmt.Errorf("the script answered %T: %w", r, ErrInternal)
		}
		counts[sh] = n
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("cannot count the keys: %w", err)
	}
	var total int64
	for _, n := range counts {
		total += n
	}
	return total, nil
}

// Keys returns the keys of every shard that match pattern (Redis' KEYS:
// glob-style), but the cluster's own, shard by shard. Each shard's keys
// are walked in steps (SCAN): a key that exists throughout is returned
// once; one written or deleted meanwhile may be or not.
func (c *Client) Keys(ctx context.Context, pattern string) ([]string, error) {
	shards, err := c.storageOrErr("list the keys")
	if err != nil {
		return nil, err
	}
	if pattern == "" { // it matches the empty key alone, and no key is empty
		return nil, nil
	}
	found := make([][]string, len(shards))
	err = onEveryShard(ctx, shards, func(ctx context.Context, sh int, b *redisbatch.Batcher) error {
		keys, err := walkShard(ctx, b, pattern)
		for _, k := range keys {
			if !IsOwnKey(k) {
				found[sh] = append(found[sh], k)
			}
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cannot list the keys: %w", err)
	}
	var out []string
	for _, f := range found {
		out = append(out, f...)
	}
	return out, nil
}

// walkShard walks b's keys that match pattern with SCAN, from cursor 0
// until Redis answers 0, and returns each key it found once.
func walkShard(ctx context.Context, b *redisbatch.Batcher, pattern string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for cursor := uint64(0); ; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		keys, next, err := scanStep(ctx, b, cursor, walkStepCount, ScanOptions{Match: pattern})
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
		if cursor = next; cursor == 0 {
			return out, nil
		}
	}
}

// RandomKey returns a random key but the cluster's own, or found false
// when there is none. It asks every shard for one and picks a shard's
// with a chance in proportion to the shard's keys (its own included).
func (c *Client) RandomKey(ctx context.Context) (key string, found bool, err error) {
	shards, err := c.storageOrErr("pick a random key")
	if err != nil {
		return "", false, err
	}
	keys := make([]string, len(shards))
	weights := make([]int64, len(shards))
	err = onEveryShard(ctx, shards, func(ctx context.Context, sh int, b *redisbatch.Batcher) error {
		r, err := eval(ctx, b, randomKeyScript, nil, OwnPrefix)
		if err != nil {
			return err
		}
		pair, ok := r.([]any)
		if !ok || len(pair) != 2 {
			return fmt.Errorf("the script answered %v: %w", r, ErrInternal)
		}
		if k, ok := pair[0].(string); ok {
			keys[sh], weights[sh] = k, max(1, toInt64(pair[1]))
		}
		return nil
	})
	if err != nil {
		return "", false, fmt.Errorf("cannot pick a random key: %w", err)
	}
	var total int64
	for _, w := range weights {
		total += w
	}
	if total == 0 {
		return "", false, nil
	}
	at := rand.Int64N(total)
	for sh, w := range weights {
		if at < w {
			return keys[sh], true, nil
		}
		at -= w
	}
	return "", false, fmt.Errorf("cannot pick a random key: %w: weights", ErrInternal)
}

// stringsOf converts a script's array of strings.
func stringsOf(r any) ([]string, error) {
	if r == nil {
		return nil, nil
	}
	arr, ok := r.([]any)
	if !ok {
		return nil, fmt.Errorf("redis answered %T, not an array: %w", r, ErrInternal)
	}
	out := make([]string, len(arr))
	for i, e := range arr {
		if out[i], ok = e.(string); !ok {
			return nil, fmt.Errorf("redis answered an array of %T: %w", e, ErrInternal)
		}
	}
	return out, nil
}

// toInt64 is r as an integer, 0 if it is none.
func toInt64(r any) int64 {
	switch n := r.(type) {
	case int64:
		return n
	case string:
		v, _ := strconv.ParseInt(n, 10, 64)
		return v
	}
	return 0
}
