package snapshot_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/internal/testing/redistest"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/snapshot"
)

// benchKeys is the keys of the benchmark's snapshot: strings of 100
// bytes, and small hashes, lists and sorted sets, 4 of every 10.
const benchKeys = 100_000

// BenchmarkRestore restores one RDB of benchKeys keys into two empty
// shards, read in-process and through a temporary redis-server.
func BenchmarkRestore(b *testing.B) {
	ctx := b.Context()
	srv := redistest.Start(b)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer c.Close()
	if err := c.ConfigSet(ctx, "repl-diskless-sync-delay", "0").Err(); err != nil {
		b.Fatal(err)
	}
	value := strings.Repeat("v", 100)
	for start := 0; start < benchKeys; start += 1000 {
		pipe := c.Pipeline()
		for i := start; i < start+1000; i++ {
			k := fmt.Sprintf("key:%d", i)
			switch i % 10 {
			case 0, 1:
				pipe.HSet(ctx, k, "a", i, "b", value[:20], "c", "three")
			case 2:
				pipe.RPush(ctx, k, "x", i, value[:30])
			case 3:
				pipe.ZAdd(ctx, k, redis.Z{Score: float64(i), Member: "m"}, redis.Z{Score: 1, Member: "n"})
			default:
				pipe.Set(ctx, k, value, 0)
			}
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
	dir, m, err := snapshot.Take(ctx, snapshot.TakeOptions{Cluster: "bench", Racks: 1, ShardsPerRack: 1, Root: b.TempDir(),
		Source: func(r, s int) snapshot.Source { return snapshot.Source{Addr: srv.Addr()} }})
	if err != nil {
		b.Fatal(err)
	}
	pm, err := partmap.Build(partmap.Spec{Cluster: "dst", Racks: 1, ShardsPerRack: 2,
		Layers: []partmap.LayerSpec{{Name: "spine", Nodes: 1}}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	p, err := partmap.Compile(pm)
	if err != nil {
		b.Fatal(err)
	}
	shards := make([]*redis.Client, 2)
	for s := range shards {
		shards[s] = redis.NewClient(&redis.Options{Addr: redistest.Start(b).Addr()})
		defer shards[s].Close()
	}
	for _, bc := range []struct{ name, redisServer string }{
		{"in-process", ""},
		{"redis-server", "redis-server"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(m.Shards[0].Size)
			var took time.Duration
			for b.Loop() {
				b.StopTimer()
				for _, sh := range shards {
					if err := sh.FlushAll(ctx).Err(); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				start := time.Now()
				res, err := snapshot.Restore(ctx, snapshot.RestoreOptions{
					Dir: dir, Placement: p, RedisServer: bc.redisServer, TempDir: filepath.Join(b.TempDir()),
					Target: func(r, s int) *redis.Options { return shards[s].Options() },
				})
				took += time.Since(start)
				if err != nil || res.Keys != benchKeys {
					b.Fatalf("restore: %+v, %v; want %d keys", res, err, benchKeys)
				}
			}
			b.ReportMetric(float64(took.Nanoseconds())/float64(b.N)/benchKeys, "ns/key")
		})
	}
}
