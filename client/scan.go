package client

import (
	"context"
	"fmt"
	"strconv"

	"github.com/distcache/distcache/dataplane/redisbatch"
)

// ScanOptions are SCAN's options.
type ScanOptions struct {
	// Match is a glob-style pattern the keys must match ("": any).
	Match string
	// Count is the work of each step in a shard, as Redis' COUNT (0: 10).
	Count int64
	// Type is the type the keys must be of ("": any).
	Type string
}

// The cursor of Scan walks the shards in turn, by global shard index
// (partmap.Placement.ShardIndex), each with Redis' own SCAN. Its low
// scanShardBits bits are the shard's index, the bits above them the
// cursor of that shard's Redis:
//
//	cursor = redisCursor<<16 | shard
//
// So 0 is shard 0 at Redis' cursor 0: the start. When a shard's Redis
// answers cursor 0, the walk goes on at the next shard with Redis'
// cursor 0 (the cursor is then the shard's index alone), and after the
// last shard Scan answers 0: the end. Every key that exists from the
// first call to the last is returned, perhaps more than once, as Redis'
// SCAN promises, while the partition map keeps its shards.
const scanShardBits = 16

// maxRedisCursor bounds the Redis cursors a Scan cursor can carry. Redis'
// cursor is below the size of its hash table: 2^48 keys are far more
// than a server holds.
const maxRedisCursor = 1<<(64-scanShardBits) - 1

// Scan runs one step of the walk at cursor (see scanShardBits) and
// returns the next cursor and the keys found, but the cluster's own. A
// step scans the cursor's shard once; when that shard is done and fewer
// than Count keys were found it goes on to the next shard, so no call
// answers nothing only because a shard ended. A cursor whose shard is
// past the last ends the walk: 0 and no keys.
func (c *Client) Scan(ctx context.Context, cursor uint64, o ScanOptions) (next uint64, keys []string, err error) {
	shards, err := c.storageOrErr("scan the keys")
	if err != nil {
		return 0, nil, err
	}
	if len(shards) > 1<<scanShardBits {
		return 0, nil, fmt.Errorf("cannot scan the keys: %d shards, at most %d: %w", len(shards), 1<<scanShardBits, ErrInternal)
	}
	count := o.Count
	if count <= 0 {
		count = 10
	}
	sh, rc := int(cursor&(1<<scanShardBits-1)), cursor>>scanShardBits
	for sh < len(shards) {
		found, at, err := scanStep(ctx, shards[sh], rc, count, o)
		if err != nil {
			return 0, nil, fmt.Errorf("cannot scan the keys of shard %d: %w", sh, err)
		}
		for _, k := range found {
			if !IsOwnKey(k) {
				keys = append(keys, k)
			}
		}
		if at != 0 {
			if at > maxRedisCursor {
				return 0, nil, fmt.Errorf("cannot scan the keys of shard %d: Redis' cursor %d takes more than %d bits: %w",
					sh, at, 64-scanShardBits, ErrInternal)
			}
			return at<<scanShardBits | uint64(sh), keys, nil
		}
		if sh++; sh < len(shards) && int64(len(keys)) >= count {
			return uint64(sh), keys, nil
		}
		rc = 0
	}
	return 0, keys, nil
}

// scanStep runs one SCAN at Redis' cursor rc on b: the keys and the
// next cursor.
func scanStep(ctx context.Context, b *redisbatch.Batcher, rc uint64, count int64, o ScanOptions) ([]string, uint64, error) {
	cmd := []any{"SCAN", strconv.FormatUint(rc, 10), "COUNT", count}
	if o.Match != "" {
		cmd = append(cmd, "MATCH", o.Match)
	}
	if o.Type != "" {
		cmd = append(cmd, "TYPE", o.Type)
	}
	call := redisbatch.Call{Cmds: [][]any{cmd}}
	b.EvalMany(ctx, []*redisbatch.Call{&call})
	if call.Err != nil {
		return nil, 0, fmt.Errorf("redis: %w", call.Err)
	}
	replies, ok := call.Result.([]any)
	if !ok || len(replies) != 1 {
		return nil, 0, fmt.Errorf("redis answered %v: %w", call.Result, ErrInternal)
	}
	pair, ok := replies[0].([]any)
	if !ok || len(pair) != 2 {
		return nil, 0, fmt.Errorf("redis answered SCAN with %v: %w", replies[0], ErrInternal)
	}
	at, ok := pair[0].(string)
	if !ok {
		return nil, 0, fmt.Errorf("redis answered SCAN's cursor with %T: %w", pair[0], ErrInternal)
	}
	next, err := strconv.ParseUint(at, 10, 64)
	if err != nil {
		return nil, 0, fmt.Errorf("redis answered SCAN's cursor %q: %w", at, ErrInternal)
	}
	keys, err := stringsOf(pair[1])
	return keys, next, err
}
