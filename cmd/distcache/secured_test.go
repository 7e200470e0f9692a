package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/internal/testing/certtest"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/snapshot"
)

// securedSpec is a standalone cluster whose Redis servers require a
// password and serve TLS only, and whose gateway reaches them itself.
const securedSpec = `apiVersion: distcache.io/v1alpha1
kind: CacheCluster
metadata: {name: secured}
spec:
  storage:
    racks: 1
    shardsPerRack: 2
    hashTags: true
    auth: {secretName: redis-login}
    tls: {certSecretName: redis-cert}
  dataPlane: {directReads: true, directWrites: true}
  layers:
    - {name: spine, nodes: 1}
`

// TestSecuredStandaloneCluster runs the same YAML as a managed cluster
// with storage.auth and storage.tls, as local processes: `distcache up`
// takes the Secrets' keys as files. A client without the password or
// without TLS is refused by the redis-servers; the cluster serves through
// its gateway, which logs in to Redis itself for direct writes and
// transactions; the password is rotated in the three documented steps
// while a bounded loop writes through the gateway, and none of its writes
// fails; the old password is refused afterwards, and a transaction, a
// script and a keyspace command still run (on new connections when the
// gateway opens them); and `distcache backup` logs in with the new one.
func TestSecuredStandaloneCluster(t *testing.T) {
	bin := buildDistcache(t)
	dir := t.TempDir()
	authDir, tlsDir := filepath.Join(dir, "auth"), filepath.Join(dir, "tls")
	ca := certtest.NewCA(t, dir, "secured-ca")
	cert, key := ca.Server(t, "secured-redis")
	files := map[string]string{filepath.Join(authDir, "password"): "first-pass"}
	for name, src := range map[string]string{"tls.crt": cert, "tls.key": key, "ca.crt": ca.File} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Join(tlsDir, name)] = string(b)
	}
	writeFiles(t, files)
	file, runDir := clusterFile(t, bin, securedSpec)
	if out, err := run(t, bin, "up", "-f", file, "--run-dir", runDir, "--redis-auth-dir", authDir, "--redis-tls-dir", tlsDir); err != nil {
		t.Fatalf("up: %v\n%s", err, out)
	}
	var gateway string
	var servers []string
	for _, p := range status(t, bin, runDir).Processes {
		switch p.Kind {
		case "redis":
			servers = append(servers, p.Addr)
		case "gateway":
			gateway = p.Addr
		}
	}
	if len(servers) != 2 || gateway == "" {
		t.Fatalf("redis-servers %v, gateway %q", servers, gateway)
	}
	ctx := t.Context()
	login := func(addr, password string, tlsOn bool) error {
		o := &redis.Options{Addr: addr, Password: password, MaxRetries: -1}
		if tlsOn {
			o.TLSConfig = &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}
		}
		c := redis.NewClient(o)
		defer c.Close()
		return c.Ping(ctx).Err()
	}
	for _, tc := range []struct {
		what, password, want string
		tlsOn                bool
	}{
		{"no password", "", "NOAUTH", true},
		{"a wrong password", "guess", "WRONGPASS", true},
		{"plaintext", "first-pass", "", false},
	} {
		if err := login(servers[0], tc.password, tc.tlsOn); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s to %s: %v, want a refusal %q", tc.what, servers[0], err, tc.want)
		}
	}

	// A bounded loop of writes through the gateway during the rotation.
	gw := redis.NewClient(&redis.Options{Addr: gateway})
	defer gw.Close()
	loadCtx, stop := context.WithTimeout(ctx, 2*time.Minute)
	defer stop()
	var wg sync.WaitGroup
	var writes, failed int
	wg.Go(func() {
		for i := 0; i < 200000 && loadCtx.Err() == nil; i++ {
			if err := gw.Set(loadCtx, fmt.Sprintf("rot-%d", i%500), i, 0).Err(); err != nil && loadCtx.Err() == nil {
				failed++
				t.Logf("write %d: %v", i, err)
			}
			writes++
		}
	})
	accepted := func(password string, want bool) func() (bool, error) {
		return func() (bool, error) {
			for _, s := range servers {
				if (login(s, password, true) == nil) != want {
					return false, nil
				}
			}
			return true, nil
		}
	}
	// 1. accept the new password; 2. log in with it, still accepting the
	// old one; 3. drop the old one.
	writeFiles(t, map[string]string{filepath.Join(authDir, "previous"): "second-pass"})
	poll.Eventually(t, "the new password accepted", accepted("second-pass", true))
	writeFiles(t, map[string]string{filepath.Join(authDir, "password"): "second-pass", filepath.Join(authDir, "previous"): "first-pass"})
	if err := os.Remove(filepath.Join(authDir, "previous")); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, "the old password refused", accepted("first-pass", false))
	stop()
	wg.Wait()
	if failed != 0 || writes < 10 {
		t.Fatalf("%d of %d writes through the gateway failed during the rotation", failed, writes)
	}
	if err := login(servers[1], "second-pass", true); err != nil {
		t.Fatalf("the new password refused: %v", err)
	}
	atRedis(ctx, t, gw)

	out, err := run(t, bin, "backup", "--run-dir", runDir, "--out", filepath.Join(dir, "sets"),
		"--redis-password-file", filepath.Join(authDir, "password"), "--redis-tls", "--redis-tls-ca-file", filepath.Join(tlsDir, "ca.crt"))
	if err != nil {
		t.Fatalf("backup: %v\n%s", err, out)
	}
	sets, err := snapshot.Sets(filepath.Join(dir, "sets"), "secured")
	if err != nil || len(sets) != 1 {
		t.Fatalf("sets %v (%v)", sets, err)
	}
	if _, err := snapshot.VerifySet(sets[0]); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d writes through the gateway during the rotation, none failed", writes)
}

// writeFiles writes each file (path: content), making its directory.
func writeFiles(t *testing.T, files map[string]string) {
	t.Helper()
	for path, content := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// atRedis runs, through gw, commands that the gateway runs at the shards'
// Redis itself: a transaction of keys with one hash tag, a script and
// DBSIZE. Each needs the gateway's own login to Redis.
func atRedis(ctx context.Context, t *testing.T, gw *redis.Client) {
	t.Helper()
	cmds, err := gw.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "{cart}:items", 3, 0)
		p.IncrBy(ctx, "{cart}:total", 42)
		return nil
	})
	if err != nil || len(cmds) != 2 {
		t.Fatalf("MULTI/EXEC through the gateway: %v (%d replies)", err, len(cmds))
	}
	if got, err := gw.Eval(ctx, "return redis.call('GET', KEYS[1])", []string{"{cart}:items"}).Text(); err != nil || got != "3" {
		t.Fatalf("EVAL through the gateway = %q (%v), want 3", got, err)
	}
	if n, err := gw.DBSize(ctx).Result(); err != nil || n < 2 {
		t.Fatalf("DBSIZE through the gateway = %d (%v)", n, err)
	}
}
