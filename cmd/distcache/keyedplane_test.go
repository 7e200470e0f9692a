package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/internal/testing/redistest"
)

// keyedPlane is what the data-plane key tests start from: a redis-server
// and its client, a key directory holding authKeyA, and a map of one
// spine node at free UDP ports from base (the shim's is base, the node's
// base+1).
type keyedPlane struct {
	srv             *redistest.Server
	rdb             *redis.Client
	mapPath, keyDir string
	base            int
}

func newKeyedPlane(t *testing.T, bin string) keyedPlane {
	t.Helper()
	p := keyedPlane{srv: redistest.Start(t)}
	p.rdb = redis.NewClient(&redis.Options{Addr: p.srv.Addr()})
	t.Cleanup(func() { _ = p.rdb.Close() })
	dir := t.TempDir()
	p.mapPath, p.keyDir = filepath.Join(dir, "map.json"), filepath.Join(dir, "key")
	if err := os.Mkdir(p.keyDir, 0o700); err != nil {
		t.Fatal(err)
	}
	writeKeyDir(t, p.keyDir, authKeyA, nil)
	p.base = freeUDPBlock(t, 2)
	if out, err := run(t, bin, "map", "init", "--out", p.mapPath, "--layer", "spine=1", "--base-port", strconv.Itoa(p.base)); err != nil {
		t.Fatalf("map init: %v\n%s", err, out)
	}
	return p
}

// putUntilHit writes value to key through c, then reads it until a cache
// node serves it: the node inserts the key in its next interval.
func putUntilHit(ctx context.Context, t *testing.T, c *client.Client, key, value string) {
	t.Helper()
	if err := c.Put(ctx, key, []byte(value)); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		res, err := c.GetResult(ctx, key)
		if err == nil && res.Hit && string(res.Value) == value {
			return
		}
		if ctx.Err() != nil || i > 100_000 {
			t.Fatalf("no cache hit with %s: %+v, %v", value, res, err)
		}
	}
}

// putWhenUp writes value to key through c, again while the processes,
// which start asynchronously, do not answer yet.
func putWhenUp(ctx context.Context, t testing.TB, c *client.Client, key, value string) {
	t.Helper()
	for i := 0; ; i++ {
		err := c.Put(ctx, key, []byte(value))
		if err == nil {
			return
		}
		if ctx.Err() != nil || i > 1000 {
			t.Fatalf("cannot write %q: %v", value, err)
		}
	}
}
