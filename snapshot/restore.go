package snapshot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/dataplane/heldkeys"
	"github.com/distcache/distcache/dataplane/shim"
	"github.com/distcache/distcache/placement/partmap"
)

// ErrNotEmpty reports a target shard that already holds keys.
var ErrNotEmpty = errors.New("target shard not empty")

// ErrKeyExists reports a key that the target cluster already holds.
var ErrKeyExists = errors.New("key exists in the target")

// RestoreOptions say what to load into which cluster.
type RestoreOptions struct {
	// Dir is the snapshot set's directory.
	Dir string
	// Placement is the target cluster's compiled partition map: it places
	// each key on a shard (Placement.Shard), as the data plane does.
	Placement *partmap.Placement
	// Target is how to reach the Redis of the target's shard s of rack r
	// (indexes of the map's storage racks and shards).
	Target func(r, s int) *redis.Options
	// RedisServer is the redis-server binary that loads each RDB (default
	// "redis-server" on PATH). It must read the RDB version of the
	// snapshot, and write DUMP payloads the target's Redis accepts: the
	// same major version as the target, or an older one.
	RedisServer string
	// TempDir holds the temporary servers' directories (default
	// os.TempDir()).
	TempDir string
	// Replace overwrites keys the target holds; without it such a key
	// fails the restore.
	Replace bool
	// Force restores into target shards that already hold keys; without
	// it every target shard must be empty (DBSIZE 0).
	Force bool
	// LoadTimeout bounds each temporary server's loading of its RDB
	// (default 10m).
	LoadTimeout time.Duration
	// Logger receives progress (default: discarded).
	Logger *slog.Logger
}

// RestoreResult counts what Restore did.
type RestoreResult struct {
	// Keys restored into the target.
	Keys int
	// Internal keys of the source's shims left out: each shard's set of
	// keys a cache may hold and its applied-write marks, which describe
	// the source cluster's caches and writers, not the target's.
	Internal int
	// Expired keys: gone between SCAN and DUMP.
	Expired int
}

// Restore verifies the set in o.Dir and writes every key of every RDB in
// it to the target shard that o.Placement gives the key, with its
// remaining time to live. Only database 0, the one DistCache uses, is
// restored.
func Restore(ctx context.Context, o RestoreOptions) (RestoreResult, error) {
	var res RestoreResult
	m, err := VerifySet(o.Dir)
	if err != nil {
		return res, err
	}
	o = o.withDefaults()
	targets, err := dialTargets(ctx, o)
	defer func() {
		for _, rack := range targets {
			for _, c := range rack {
				_ = c.Close()
			}
		}
	}()
	if err != nil {
		return res, err
	}
	for _, s := range m.Shards {
		o.Logger.Info("restoring shard", "shard", s.Name, "file", s.File, "bytes", s.Size)
		n, err := restoreShard(ctx, o, targets, filepath.Join(o.Dir, s.File))
		res.Keys += n.Keys
		res.Internal += n.Internal
		res.Expired += n.Expired
		if err != nil {
			return res, fmt.Errorf("cannot restore shard %s of snapshot set %s: %w", s.Name, o.Dir, err)
		}
	}
	return res, nil
}

func (o RestoreOptions) withDefaults() RestoreOptions {
	if o.RedisServer == "" {
		o.RedisServer = "redis-server"
	}
	if o.TempDir == "" {
		o.TempDir = os.TempDir()
	}
	if o.LoadTimeout <= 0 {
		o.LoadTimeout = 10 * time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// dialTargets connects to every target shard and, without Force, checks
// that each is empty.
func dialTargets(ctx context.Context, o RestoreOptions) ([][]*redis.Client, error) {
	if _, err := exec.LookPath(o.RedisServer); err != nil {
		return nil, fmt.Errorf("cannot restore without redis-server to read the RDB files: %w", err)
	}
	racks := o.Placement.Map().Storage.Racks
	out := make([][]*redis.Client, len(racks))
	for r, rack := range racks {
		for s, sh := range rack.Shards {
			c := redis.NewClient(o.Target(r, s))
			out[r] = append(out[r], c)
			n, err := c.DBSize(ctx).Result()
			if err != nil {
				return out, fmt.Errorf("cannot reach target shard %s at %s: %w", sh.Name, c.Options().Addr, err)
			}
			if n > 0 && !o.Force {
				return out, fmt.Errorf("cannot restore into shard %s: it holds %d keys: %w (restore into a new cluster, or give --force)", sh.Name, n, ErrNotEmpty)
			}
		}
	}
	return out, nil
}

// internalKey reports the shims' own keys, left out of a restore.
func internalKey(k string) bool {
	return k == heldkeys.Key || strings.HasPrefix(k, shim.AppliedPrefix)
}

// scanBatch is the keys asked of each SCAN.
const scanBatch = 500

// restoreShard loads one RDB into a temporary server and copies its keys.
func restoreShard(ctx context.Context, o RestoreOptions, targets [][]*redis.Client, rdb string) (RestoreResult, error) {
	var res RestoreResult
	src, err := startTempServer(ctx, o.RedisServer, rdb, o.TempDir, o.LoadTimeout)
	if err != nil {
		return res, err
	}
	defer src.stop()
	var cursor uint64
	for {
		keys, next, err := src.client.Scan(ctx, cursor, "*", scanBatch).Result()
		if err != nil {
			return res, fmt.Errorf("cannot SCAN the snapshot: %w", err)
		}
		n, err := copyKeys(ctx, o, src.client, targets, keys)
		res.Keys += n.Keys
		res.Internal += n.Internal
		res.Expired += n.Expired
		if err != nil {
			return res, err
		}
		if cursor = next; cursor == 0 {
			return res, nil
		}
	}
}

// dumped is one key read from the snapshot.
type dumped struct {
	key     string
	payload string
	ttl     time.Duration // 0: none
}

// copyKeys DUMPs keys from src and RESTOREs them into their target shards.
func copyKeys(ctx context.Context, o RestoreOptions, src *redis.Client, targets [][]*redis.Client, keys []string) (RestoreResult, error) {
	var res RestoreResult
	var want []string
	for _, k := range keys {
		if internalKey(k) {
			res.Internal++
			continue
		}
		want = append(want, k)
	}
	pipe := src.Pipeline()
	dumps := make([]*redis.StringCmd, len(want))
	ttls := make([]*redis.DurationCmd, len(want))
	for i, k := range want {
		dumps[i], ttls[i] = pipe.Dump(ctx, k), pipe.PTTL(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return res, fmt.Errorf("cannot DUMP keys of the snapshot: %w", err)
	}
	byShard := map[[2]int][]dumped{}
	for i, k := range want {
		payload, err := dumps[i].Result()
		ttl := ttls[i].Val()
		if errors.Is(err, redis.Nil) || ttl == -2 || (ttl >= 0 && ttl < time.Millisecond) {
			res.Expired++ // expired since SCAN
			continue
		}
		if err != nil {
			return res, fmt.Errorf("cannot DUMP key %q: %w", k, err)
		}
		if ttl < 0 {
			ttl = 0
		}
		r, s := o.Placement.Shard(k)
		byShard[[2]int{r, s}] = append(byShard[[2]int{r, s}], dumped{k, payload, ttl})
	}
	for rs, ds := range byShard {
		n, err := restoreInto(ctx, targets[rs[0]][rs[1]], ds, o.Replace)
		res.Keys += n
		if err != nil {
			name := o.Placement.Map().Storage.Racks[rs[0]].Shards[rs[1]].Name
			return res, fmt.Errorf("cannot restore into shard %s: %w", name, err)
		}
	}
	return res, nil
}

// restoreInto RESTOREs ds into c in one pipeline and counts those restored.
func restoreInto(ctx context.Context, c *redis.Client, ds []dumped, replace bool) (int, error) {
	pipe := c.Pipeline()
	cmds := make([]*redis.StatusCmd, len(ds))
	for i, d := range ds {
		if replace {
			cmds[i] = pipe.RestoreReplace(ctx, d.key, d.ttl, d.payload)
		} else {
			cmds[i] = pipe.Restore(ctx, d.key, d.ttl, d.payload)
		}
	}
	_, _ = pipe.Exec(ctx)
	n := 0
	for i, cmd := range cmds {
		err := cmd.Err()
		if err == nil {
			n++
			continue
		}
		if strings.HasPrefix(err.Error(), "BUSYKEY") {
			return n, fmt.Errorf("key %q: %w (give --replace to overwrite it)", ds[i].key, ErrKeyExists)
		}
		return n, fmt.Errorf("cannot RESTORE key %q: %w", ds[i].key, err)
	}
	return n, nil
}
