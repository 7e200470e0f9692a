package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/internal/testing/redistest"
)

// benchCluster is a shim, a cache node and a redis-server as processes,
// with or without a data-plane key, and a client of theirs.
type benchCluster struct {
	c *client.Client
}

func startBenchCluster(b *testing.B, bin string, key []byte) *benchCluster {
	b.Helper()
	srv := redistest.Start(b)
	dir := b.TempDir()
	mapPath, keyDir := filepath.Join(dir, "map.json"), filepath.Join(dir, "key")
	base := freeUDPBlock(b, 2)
	if out, err := run(b, bin, "map", "init", "--out", mapPath, "--layer", "spine=1", "--base-port", strconv.Itoa(base)); err != nil {
		b.Fatalf("map init: %v\n%s", err, out)
	}
	var keyArgs []string
	if key != nil {
		if err := os.Mkdir(keyDir, 0o700); err != nil {
			b.Fatal(err)
		}
		writeKeyDir(b, keyDir, key, nil)
		keyArgs = []string{"--data-plane-key-dir", keyDir}
	}
	startProcess(b, bin, append([]string{"shim", "--map", mapPath, "--shard", "distcache-rack-0-0", "--redis", srv.Addr(),
		"--metrics-addr", freeTCPAddr(b), "--log-level", "warn"}, keyArgs...)...)
	startProcess(b, bin, append([]string{"node", "--map", mapPath, "--member", "distcache-spine-0",
		"--metrics-addr", freeTCPAddr(b), "--log-level", "warn", "--hot-threshold", "1", "--interval", "50ms"}, keyArgs...)...)
	c := keyedClient(b, mapPath, key, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	putWhenUp(ctx, b, c, "hot", "value")
	for i := 0; ; i++ {
		if res, err := c.GetResult(ctx, "hot"); err == nil && res.Hit {
			break
		} else if ctx.Err() != nil || i > 100_000 {
			b.Fatalf("no hit: %+v %v", res, err)
		}
	}
	return &benchCluster{c: c}
}

// BenchmarkDataPlaneMAC measures, through real processes and sockets, one
// client's sequential writes (PUT: client → shim, INVALIDATE and UPDATE
// to the node, their acks, the reply: twelve MACs when signed) and cache hits
// (GET of a key the node holds: no MAC either way), without and with a
// data-plane key, one after the other in each run (repeat the run to
// alternate them; -count repeats each sub-benchmark in a row).
func BenchmarkDataPlaneMAC(b *testing.B) {
	bin := buildDistcache(b)
	clusters := map[string]*benchCluster{
		"mac=off": startBenchCluster(b, bin, nil),
		"mac=on":  startBenchCluster(b, bin, authKeyA),
	}
	ctx := context.Background()
	value := []byte("value")
	for _, name := range []string{"mac=off", "mac=on"} {
		c := clusters[name].c
		b.Run("write/"+name, func(b *testing.B) {
			for b.Loop() {
				if err := c.Put(ctx, "cold", value); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, name := range []string{"mac=off", "mac=on"} {
		c := clusters[name].c
		b.Run("hit/"+name, func(b *testing.B) {
			misses := 0
			for b.Loop() {
				res, err := c.GetResult(ctx, "hot")
				if err != nil {
					b.Fatal(err)
				}
				if !res.Hit {
					misses++
				}
			}
			b.ReportMetric(float64(misses)/float64(b.N), "misses/op")
		})
	}
}
