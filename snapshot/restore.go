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
	// RedisServer, when set, is a redis-server binary that loads each RDB
	// into a temporary server, whose keys are copied with DUMP; it must
	// read the RDB version of the snapshot, and write DUMP payloads the
	// target's Redis accepts (the same major version as the target, or an
	// older one). When empty, Restore reads each RDB itself (RDBReader)
	// and RESTOREs the payloads it cuts out of the file.
	RedisServer string
	// TempDir holds the temporary servers' directories (default
	// os.TempDir()); only with RedisServer.
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
	// Now is the clock that says which keys of an RDB have expired
	// (default time.Now); only without RedisServer.
	Now func() time.Time
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
	// Expired keys: already expired when read from the RDB file, or gone
	// between SCAN and DUMP of a temporary server.
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
		restoreShard := restoreShardFromRDB
		if o.RedisServer != "" {
			restoreShard = restoreShardViaServer
		}
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
	if o.TempDir == "" {
		o.TempDir = os.TempDir()
	}
	if o.LoadTimeout <= 0 {
		o.LoadTimeout = 10 * time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// dialTargets connects to every target shard and, without Force, checks
// that each is empty.
func dialTargets(ctx context.Context, o RestoreOptions) ([][]*redis.Client, error) {
	if o.RedisServer != "" {
		if _, err := exec.LookPath(o.RedisServer); err != nil {
			return nil, fmt.Errorf("cannot restore with --redis-server %s: %w", o.RedisServer, err)
		}
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

// restoreItem is one key to RESTORE.
type restoreItem struct {
	key     string
	payload string
	// ttl is the time to live from now (0: none), or, when expireAt is
	// set, zero: expireAt is when the key expires (RESTORE ... ABSTTL).
	ttl      time.Duration
	expireAt time.Time
}

// args is the key's RESTORE command.
func (it restoreItem) args(replace bool) []any {
	ttl := it.ttl.Milliseconds()
	if !it.expireAt.IsZero() {
		ttl = it.expireAt.UnixMilli()
	}
	args := []any{"RESTORE", it.key, ttl, it.payload}
	if replace {
		args = append(args, "REPLACE")
	}
	if !it.expireAt.IsZero() {
		args = append(args, "ABSTTL")
	}
	return args
}

// restoreInto RESTOREs items into c in one pipeline and counts those
// restored.
func restoreInto(ctx context.Context, c *redis.Client, items []restoreItem, replace bool) (int, error) {
	pipe := c.Pipeline()
	cmds := make([]*redis.Cmd, len(items))
	for i, it := range items {
		cmds[i] = pipe.Do(ctx, it.args(replace)...)
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
			return n, fmt.Errorf("key %q: %w (give --replace to overwrite it)", items[i].key, ErrKeyExists)
		}
		return n, fmt.Errorf("cannot RESTORE key %q: %w", items[i].key, err)
	}
	return n, nil
}
