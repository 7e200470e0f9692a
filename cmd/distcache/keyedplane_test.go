package main

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

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
	p.base = freeUDPBase(t)
	if out, err := run(t, bin, "map", "init", "--out", p.mapPath, "--layer", "spine=1", "--base-port", strconv.Itoa(p.base)); err != nil {
		t.Fatalf("map init: %v\n%s", err, out)
	}
	return p
}
