package gateway_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/internal/testing/clustertest"
)

// benchKeys is the key space of the pipelined benchmarks.
const benchKeys = 1000

// BenchmarkPipelinedGET measures GETs pipelined 16 at a time by go-redis
// from parallel connections, through the gateway (a real cluster in this
// process: redis-servers, shims, cache nodes) and, as the baseline in the
// same run, against one of the cluster's redis-servers directly. Every key
// exists; keys are spread uniformly, so reads miss the caches and reach a
// shim.
func BenchmarkPipelinedGET(b *testing.B) {
	addr, _, c := startGatewayOn(b, clustertest.Config{Name: "gw", Racks: 2, ShardsPerRack: 1, Spine: 2})
	var direct string
	for _, srv := range c.Redis {
		direct = srv.Addr()
		break
	}
	for _, bc := range []struct{ name, addr string }{{"gateway", addr}, {"redis", direct}} {
		b.Run(bc.name, func(b *testing.B) {
			rc := redis.NewClient(&redis.Options{Addr: bc.addr, Protocol: 2, PoolSize: 64})
			defer rc.Close()
			ctx := context.Background()
			for i := range benchKeys {
				if err := rc.Set(ctx, "bench:"+strconv.Itoa(i), "value-"+strconv.Itoa(i), 0).Err(); err != nil {
					b.Fatal(err)
				}
			}
			var next atomic.Uint64
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				cmds := make([]*redis.StringCmd, 16)
				for pb.Next() {
					pipe := rc.Pipeline()
					for j := range cmds {
						cmds[j] = pipe.Get(ctx, "bench:"+strconv.FormatUint(next.Add(1)%benchKeys, 10))
					}
					if _, err := pipe.Exec(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N*16)/b.Elapsed().Seconds(), "GETs/s")
		})
	}
}
