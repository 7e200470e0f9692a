package gateway_test

import (
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/dataplane/heldkeys"
	"github.com/distcache/distcache/internal/testing/clustertest"
)

// A pipeline's SETs for one shard run as one script in its Redis (the
// loops' direct writes, heldkeys.SetManySource): every SET is acknowledged
// and its value stored, the key a cache may hold through its shim, and
// Redis runs fewer scripts than SETs.
func TestDirectSetsShareAScript(t *testing.T) {
	addr, _, c := startGatewayOn(t, clustertest.Config{Name: "sets", Racks: 1, ShardsPerRack: 1, Spine: 1,
		DirectReads: true, DirectWrites: true})
	var srv string
	for _, r := range c.Redis {
		srv = r.Addr()
	}
	ctx := t.Context()
	rdb := redis.NewClient(&redis.Options{Addr: srv})
	defer rdb.Close()
	if err := rdb.SAdd(ctx, heldkeys.Key, "sets:3").Err(); err != nil { // as if a cache held it
		t.Fatal(err)
	}
	rc := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1})
	defer rc.Close()
	const n = 16
	pipe := rc.Pipeline()
	cmds := make([]*redis.StatusCmd, n)
	for i := range cmds {
		cmds[i] = pipe.Set(ctx, fmt.Sprintf("sets:%d", i), fmt.Sprintf("v%d", i), 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for i, cmd := range cmds {
		if cmd.Val() != "OK" {
			t.Fatalf("SET %d: %q, %v", i, cmd.Val(), cmd.Err())
		}
		key := fmt.Sprintf("sets:%d", i)
		if v, err := rdb.Get(ctx, key).Result(); err != nil || v != fmt.Sprintf("v%d", i) {
			t.Fatalf("%s = %q, %v in Redis", key, v, err)
		}
	}
	scripts, checks := commandCalls(t, srv, "evalsha"), commandCalls(t, srv, "sismember")
	if checks < n || scripts >= n {
		t.Fatalf("Redis ran %d scripts and %d checks for %d SETs; want fewer scripts than SETs and a check each", scripts, checks, n)
	}
}
