package gateway_test

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/gateway"
	"github.com/distcache/distcache/internal/testing/clustertest"
)

// TestPausedRedisAnswersAnError pauses the only shard's Redis (SIGSTOP)
// under a gateway whose loops read and write it on their own connections:
// a GET and a SET of keys no cache holds get an error reply, rather than
// waiting for Redis to resume (the loops expire a connection that answers
// nothing, Pipes.Expire). Once Redis resumes, both succeed again.
func TestPausedRedisAnswersAnError(t *testing.T) {
	c := clustertest.Start(t, clustertest.Config{Name: "paused", Racks: 1, ShardsPerRack: 1, Spine: 1, DirectReads: true, DirectWrites: true})
	var cfg gateway.Config
	var clientCfg client.Config
	clientCfg.Transport.Polled = gateway.EventLoops(cfg)
	cfg.Store = c.NewClient(clientCfg)
	_, addr := serveGateway(t, cfg)
	// The read timeout only turns a hang into a failure.
	rc := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: time.Minute, MaxRetries: -1})
	defer rc.Close()
	ctx := t.Context()
	if err := rc.Set(ctx, "paused:k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for _, r := range c.Redis {
		r.Pause()
	}
	for _, cmd := range []redis.Cmder{rc.Get(ctx, "paused:k"), rc.Set(ctx, "paused:w", "v", 0)} {
		var reply redis.Error
		if err := cmd.Err(); !errors.As(err, &reply) {
			var ne net.Error
			t.Fatalf("%v with Redis paused: %v (a timeout of the test's client: %v), want an error reply", cmd.Args(), err, errors.As(err, &ne))
		}
	}
	for _, r := range c.Redis {
		r.Resume()
	}
	if got, err := rc.Get(ctx, "paused:k").Result(); err != nil || got != "v" {
		t.Fatalf("GET after Redis resumed = %q (%v), want v", got, err)
	}
}
