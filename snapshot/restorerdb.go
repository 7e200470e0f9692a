package snapshot

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/redis/go-redis/v9"
)

// Bounds of the keys held before they are sent to their shards: a
// pipeline per shard then carries them.
const (
	batchKeys  = 500
	batchBytes = 16 << 20
)

// restoreShardFromRDB reads one RDB file and RESTOREs each key of
// database 0 that has not expired, with its absolute expiry time, into
// its target shard.
func restoreShardFromRDB(ctx context.Context, o RestoreOptions, targets [][]*redis.Client, path string) (RestoreResult, error) {
	var res RestoreResult
	f, err := os.Open(path)
	if err != nil {
		return res, fmt.Errorf("cannot open RDB: %w", err)
	}
	defer f.Close()
	keep := func(db uint64, key string) bool {
		if db != 0 {
			return false
		}
		if internalKey(key) {
			res.Internal++
			return false
		}
		return true
	}
	rd, err := NewRDBReader(bufio.NewReaderSize(f, 1<<20), WithKeep(keep))
	if err != nil {
		return res, fmt.Errorf("cannot read %s: %w", path, err)
	}
	b := batch{o: o, targets: targets, byShard: map[[2]int][]restoreItem{}}
	now := o.Now()
	for {
		k, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return res, fmt.Errorf("cannot read %s: %w", path, err)
		}
		if !k.ExpireAt.IsZero() && !k.ExpireAt.After(now) {
			res.Expired++
			continue
		}
		b.add(restoreItem{key: k.Key, payload: string(k.Payload), expireAt: k.ExpireAt})
		if b.keys >= batchKeys || b.bytes >= batchBytes {
			n, err := b.flush(ctx)
			res.Keys += n
			if err != nil {
				return res, err
			}
			now = o.Now()
		}
	}
	n, err := b.flush(ctx)
	res.Keys += n
	return res, err
}

// batch holds keys read from an RDB until they are sent.
type batch struct {
	o           RestoreOptions
	targets     [][]*redis.Client
	byShard     map[[2]int][]restoreItem
	keys, bytes int
}

func (b *batch) add(it restoreItem) {
	r, s := b.o.Placement.Shard(it.key)
	b.byShard[[2]int{r, s}] = append(b.byShard[[2]int{r, s}], it)
	b.keys++
	b.bytes += len(it.key) + len(it.payload)
}

// flush RESTOREs the held keys, one pipeline per target shard, and counts
// those restored.
func (b *batch) flush(ctx context.Context) (int, error) {
	total := 0
	for rs, items := range b.byShard {
		n, err := restoreInto(ctx, b.targets[rs[0]][rs[1]], items, b.o.Replace)
		total += n
		if err != nil {
			name := b.o.Placement.Map().Storage.Racks[rs[0]].Shards[rs[1]].Name
			return total, fmt.Errorf("cannot restore into shard %s: %w", name, err)
		}
		delete(b.byShard, rs)
	}
	b.keys, b.bytes = 0, 0
	return total, nil
}
