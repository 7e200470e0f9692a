package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"golang.org/x/sync/errgroup"

	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/standalone/control"
	"github.com/distcache/distcache/workload"
	"github.com/distcache/distcache/workload/driver"
	"github.com/distcache/distcache/workload/twemproxy"
)

// fillBatch is how many SETs one pipeline carries.
const fillBatch = 1000

// fillKeys writes every key of the key space once on both sides before the
// runs, as data a cache tier is put in front of: into each shard's Redis
// directly for DistCache (its caches are empty: nothing to invalidate),
// and through a twemproxy of its own for twemproxy's keys. Reads of keys
// that do not exist would cost either side a Redis lookup that no cache
// can save.
//
// The servers' limits are lifted meanwhile: twemproxy gives up on a Redis
// that takes two seconds to answer, as one at its quota does under a
// pipeline of a thousand SETs.
func (o options) fillKeys(ctx context.Context, st control.Status, sd *sides) (err error) {
	start := time.Now()
	groups := append(slices.Clone(sd.distcache), sd.twemproxy...)
	defer func() {
		for _, g := range groups {
			err = errors.Join(err, g.SetLimit(o.cpu))
		}
	}()
	for _, g := range groups {
		if err := g.SetLimit(0); err != nil {
			return err
		}
	}
	shardKeys, err := o.keysByShard(st)
	if err != nil {
		return err
	}
	value := strings.Repeat("f", o.valueSize)
	g, gctx := errgroup.WithContext(ctx)
	for addr, keys := range shardKeys {
		g.Go(func() error { return setAll(gctx, addr, keys, value) })
	}
	g.Go(func() error {
		dir, err := os.MkdirTemp("", "realcpu-twemproxy-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		p, err := twemproxy.Start(gctx, twemproxy.Config{Servers: sd.addrs, Dir: dir})
		if err != nil {
			return err
		}
		defer func() { _ = p.Stop() }()
		keys := make([]string, o.keys)
		for id := range keys {
			keys[id] = driver.ModeKey(driver.Twemproxy, workload.Key(uint64(id)))
		}
		return setAll(gctx, p.Addr(), keys, value)
	})
	if err := g.Wait(); err != nil {
		return fmt.Errorf("cannot fill the key space: %w", err)
	}
	fmt.Fprintf(os.Stderr, "realcpu: wrote %d keys on each side in %v\n", o.keys, time.Since(start).Round(time.Second))
	return nil
}

// keysByShard groups the key space by the Redis address of its shard in
// the cluster's map.
func (o options) keysByShard(st control.Status) (map[string][]string, error) {
	b, err := os.ReadFile(filepath.Join(o.runDir, "map.json"))
	if err != nil {
		return nil, fmt.Errorf("cannot read the cluster's map: %w", err)
	}
	m, err := partmap.Decode(b)
	if err != nil {
		return nil, err
	}
	p, err := partmap.Compile(m)
	if err != nil {
		return nil, err
	}
	redisOf := map[string]string{} // shard name → its Redis
	for _, pr := range st.Processes {
		if pr.Kind == "redis" {
			redisOf[pr.Shard] = pr.Addr
		}
	}
	out := map[string][]string{}
	for id := range o.keys {
		key := workload.Key(id)
		r, s := p.Shard(key)
		addr := redisOf[m.Storage.Racks[r].Shards[s].Name]
		if addr == "" {
			return nil, fmt.Errorf("cannot find the Redis of shard %s", m.Storage.Racks[r].Shards[s].Name)
		}
		out[addr] = append(out[addr], key)
	}
	return out, nil
}

// setAll writes value to every key at the Redis (or proxy) at addr, in
// pipelines of fillBatch SETs. It speaks plain RESP2 (redigo): twemproxy
// closes a connection that sends HELLO, as go-redis does first.
func setAll(ctx context.Context, addr string, keys []string, value string) error {
	conn, err := redigo.DialContext(ctx, "tcp", addr, redigo.DialReadTimeout(time.Minute), redigo.DialWriteTimeout(time.Minute))
	if err != nil {
		return fmt.Errorf("cannot write keys at %s: %w", addr, err)
	}
	defer conn.Close()
	for len(keys) > 0 {
		n := min(fillBatch, len(keys))
		for _, k := range keys[:n] {
			if err := conn.Send("SET", k, value); err != nil {
				return fmt.Errorf("cannot write keys at %s: %w", addr, err)
			}
		}
		if err := conn.Flush(); err != nil {
			return fmt.Errorf("cannot write keys at %s: %w", addr, err)
		}
		for range n {
			if _, err := conn.Receive(); err != nil {
				return fmt.Errorf("cannot write keys at %s: %w", addr, err)
			}
		}
		keys = keys[n:]
	}
	return nil
}
