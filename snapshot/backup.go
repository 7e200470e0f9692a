package snapshot

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/distcache/distcache/placement/partmap"
)

// TakeOptions say what to copy and where.
type TakeOptions struct {
	// Cluster and its storage shape.
	Cluster       string
	Racks         int
	ShardsPerRack int
	// Source is how to reach the Redis of shard s of rack r.
	Source func(r, s int) Source
	// Root is the directory the set's directory is created in.
	Root string
	// Parallel bounds the shards copied at once (default 4): each copy
	// makes its Redis fork.
	Parallel int
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Take copies the RDB of every shard into a new set under o.Root and
// returns its directory and manifest. The set is written under a
// ".partial" name and renamed once every RDB is copied and verified and the
// manifest written; on failure the partial directory is removed.
func Take(ctx context.Context, o TakeOptions) (string, Manifest, error) {
	if o.Racks < 1 || o.ShardsPerRack < 1 || o.Cluster == "" {
		return "", Manifest{}, fmt.Errorf("cannot take a snapshot set: cluster %q with %d racks × %d shards", o.Cluster, o.Racks, o.ShardsPerRack)
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	par := o.Parallel
	if par < 1 {
		par = 4
	}
	m := Manifest{Format: FormatVersion, Cluster: o.Cluster, Racks: o.Racks, ShardsPerRack: o.ShardsPerRack, Started: now().UTC()}
	dir := filepath.Join(o.Root, SetName(o.Cluster, m.Started))
	partial := dir + partialSuffix
	if err := os.MkdirAll(partial, 0o700); err != nil {
		return "", m, fmt.Errorf("cannot create snapshot set directory: %w", err)
	}
	m.Shards = make([]ShardFile, o.Racks*o.ShardsPerRack)
	errs := make([]error, len(m.Shards))
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for r := range o.Racks {
		for s := range o.ShardsPerRack {
			i := r*o.ShardsPerRack + s
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				m.Shards[i], errs[i] = takeShard(ctx, o, partial, r, s)
			})
		}
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		_ = os.RemoveAll(partial)
		return "", m, fmt.Errorf("cannot take a snapshot set of %s: %w", o.Cluster, err)
	}
	m.Finished = now().UTC()
	if err := writeManifest(partial, m); err != nil {
		_ = os.RemoveAll(partial)
		return "", m, err
	}
	if err := os.Rename(partial, dir); err != nil {
		_ = os.RemoveAll(partial)
		return "", m, fmt.Errorf("cannot complete snapshot set %s: %w", dir, err)
	}
	return dir, m, nil
}

// takeShard copies and verifies shard s of rack r.
func takeShard(ctx context.Context, o TakeOptions, dir string, r, s int) (ShardFile, error) {
	name := partmap.ShardName(o.Cluster, r, s)
	f := ShardFile{Name: name, Rack: r, Shard: s, File: shardFileName(name)}
	path := filepath.Join(dir, f.File)
	src := o.Source(r, s)
	got, err := fetchRDB(ctx, src, path)
	if err != nil {
		return f, fmt.Errorf("shard %s: %w", name, err)
	}
	f.Size, f.SHA256, f.RedisVersion = got.Size, got.SHA256, got.RedisVersion
	if f.RDBInfo, err = VerifyRDBFile(path); err != nil {
		return f, fmt.Errorf("shard %s (%s): %w", name, src.Addr, err)
	}
	return f, nil
}
