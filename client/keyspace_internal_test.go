package client

import (
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/dataplane/heldkeys"
	"github.com/distcache/distcache/internal/testing/redistest"
)

// TestDBSizeCountsOwnKeysOut: DBSize counts a shard's keys but the
// cluster's own, whether it counts them in one script (a small shard) or
// walks the shard for them first (a large one).
func TestDBSizeCountsOwnKeysOut(t *testing.T) {
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := t.Context()
	pipe := rdb.Pipeline()
	for i := range 50 {
		pipe.Set(ctx, fmt.Sprintf("user:%d", i), "v", 0)
	}
	for i := range 30 {
		pipe.Set(ctx, fmt.Sprintf("distcache:applied:%d", i), "1", 0)
	}
	pipe.SAdd(ctx, heldkeys.Key, "user:1")
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	c := directCluster(t, srv.Addr())
	cl := newTestClient(t, c.p)
	saved := smallShard
	t.Cleanup(func() { smallShard = saved })
	for _, tc := range []struct {
		name  string
		small int
	}{{"one script", 20000}, {"walked", 10}, {"walked, every shard large", 0}} {
		smallShard = tc.small
		if n, err := cl.DBSize(ctx); err != nil || n != 50 {
			t.Errorf("%s: DBSize %d, %v; want 50", tc.name, n, err)
		}
	}
}
