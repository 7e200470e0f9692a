package gateway_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/dataplane/heldkeys"
	"github.com/distcache/distcache/dataplane/redisconn"
	"github.com/distcache/distcache/dataplane/shim"
	"github.com/distcache/distcache/gateway"
	"github.com/distcache/distcache/internal/testing/clustertest"
	"github.com/distcache/distcache/internal/testing/redistest"
)

// A pipeline's SETs for one shard run as one script in its Redis (the
// loops' direct writes, heldkeys.SetManySource): every SET is acknowledged
// and its value stored, the key a cache may hold through its shim, and
// Redis runs fewer scripts than SETs. With a Redis that requires a
// password, the loops' connections log in first (client.Config's
// StorageLogin) and still run them so.
func TestDirectSetsShareAScript(t *testing.T) {
	for _, password := range []string{"", "s3cret"} {
		t.Run(fmt.Sprintf("password %q", password), func(t *testing.T) {
			cc := clustertest.Config{Name: "sets", Racks: 1, ShardsPerRack: 1, Spine: 1, DirectReads: true, DirectWrites: true}
			var login redisconn.Settings
			if password != "" {
				cc.RedisOptions = []redistest.Option{redistest.WithPassword("", password)}
				cc.Shim = func(sc *shim.Config) { sc.Redis.Password = password }
				login.PasswordFile = filepath.Join(t.TempDir(), "password")
				if err := os.WriteFile(login.PasswordFile, []byte(password), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			c := clustertest.Start(t, cc)
			var cfg gateway.Config
			clientCfg := client.Config{StorageLogin: login}
			clientCfg.Transport.Polled = gateway.EventLoops(cfg)
			cfg.Store = c.NewClient(clientCfg)
			_, addr := serveGateway(t, cfg)
			directSetsShareAScript(t, addr, c, password)
		})
	}
}

func directSetsShareAScript(t *testing.T, addr string, c *clustertest.Cluster, password string) {
	var srv *redis.Options
	for _, r := range c.Redis {
		srv = &redis.Options{Addr: r.Addr(), Password: password}
	}
	ctx := t.Context()
	rdb := redis.NewClient(srv)
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
	scripts, checks := loggedInCommandCalls(t, srv, "evalsha"), loggedInCommandCalls(t, srv, "sismember")
	if checks < n || scripts >= n {
		t.Fatalf("Redis ran %d scripts and %d checks for %d SETs; want fewer scripts than SETs and a check each", scripts, checks, n)
	}
}
