package gateway_test

import (
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/dataplane/heldkeys"
	"github.com/distcache/distcache/dataplane/redisconn"
	"github.com/distcache/distcache/dataplane/shim"
	"github.com/distcache/distcache/gateway"
	"github.com/distcache/distcache/internal/testing/certtest"
	"github.com/distcache/distcache/internal/testing/clustertest"
	"github.com/distcache/distcache/internal/testing/redistest"
)

// A pipeline's SETs for one shard run as one script in its Redis (the
// loops' direct writes, heldkeys.SetManySource): every SET is acknowledged
// and its value stored, the key a cache may hold through its shim, and
// Redis runs fewer scripts than SETs, on the loops' own connections. With
// a Redis that requires a password, and one that serves TLS only, the
// loops' connections log in first (client.Config's StorageLogin) and
// still run them so.
func TestDirectSetsShareAScript(t *testing.T) {
	for _, tc := range []struct {
		name, password string
		tls            bool
	}{{"plain", "", false}, {"password", "s3cret", false}, {"password and TLS", "s3cret", true}} {
		t.Run(tc.name, func(t *testing.T) {
			cc := clustertest.Config{Name: "sets", Racks: 1, ShardsPerRack: 1, Spine: 1, DirectReads: true, DirectWrites: true}
			var login redisconn.Settings
			var srv redis.Options
			if tc.password != "" {
				cc.RedisOptions = []redistest.Option{redistest.WithPassword("", tc.password)}
				login.PasswordFile = filepath.Join(t.TempDir(), "password")
				if err := os.WriteFile(login.PasswordFile, []byte(tc.password), 0o600); err != nil {
					t.Fatal(err)
				}
				srv.Password = tc.password
			}
			if tc.tls {
				dir := t.TempDir()
				ca := certtest.NewCA(t, dir, "ca")
				cert, key := ca.Server(t, "redis")
				cc.RedisOptions = append(cc.RedisOptions, redistest.WithTLS(redistest.TLSFiles{Cert: cert, Key: key, CA: ca.File}))
				login.TLS, login.CAFile = true, ca.File
				srv.TLSConfig = &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
			}
			cc.Shim = func(sc *shim.Config) { sc.Redis.Password, sc.Redis.TLSConfig = srv.Password, srv.TLSConfig }
			c := clustertest.Start(t, cc)
			var cfg gateway.Config
			clientCfg := client.Config{StorageLogin: login}
			clientCfg.Transport.Polled = gateway.EventLoops(cfg)
			cfg.Store = c.NewClient(clientCfg)
			_, addr := serveGateway(t, cfg)
			for _, r := range c.Redis {
				srv.Addr = r.Addr()
			}
			directSetsShareAScript(t, addr, &srv)
		})
	}
}

func directSetsShareAScript(t *testing.T, addr string, srv *redis.Options) {
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
	clients, err := rdb.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`name=` + client.PipeClientName + ` .*cmd=evalsha`).MatchString(clients) {
		t.Fatalf("no connection of the gateway's loops (%s) ran the script:\n%s", client.PipeClientName, clients)
	}
}
