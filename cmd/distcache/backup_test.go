package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/snapshot"
)

// backupCluster is a CacheCluster file with a gateway and no cache
// traffic: the round trip writes straight to Redis.
func backupCluster(name string, racks, shards int) string {
	return fmt.Sprintf(`apiVersion: distcache.io/v1alpha1
kind: CacheCluster
metadata: {name: %s}
spec:
  storage: {racks: %d, shardsPerRack: %d}
  layers:
    - {name: spine, nodes: 1}
`, name, racks, shards)
}

// storageOf is a running standalone cluster's placement and a client of
// each shard's redis-server, by shard name.
type storageOf struct {
	placement *partmap.Placement
	redis     map[string]*redis.Client
	gateway   string
}

func upStorage(t *testing.T, bin, spec string) (runDir string, s storageOf) {
	t.Helper()
	file, runDir := clusterFile(t, bin, spec)
	if out, err := run(t, bin, "up", "-f", file, "--run-dir", runDir); err != nil {
		t.Fatalf("up: %v\n%s", err, out)
	}
	st := status(t, bin, runDir)
	p, err := partmap.Compile(readMap(t, st.MapFile))
	if err != nil {
		t.Fatal(err)
	}
	s = storageOf{placement: p, redis: map[string]*redis.Client{}}
	for _, pr := range st.Processes {
		switch pr.Kind {
		case "redis":
			c := redis.NewClient(&redis.Options{Addr: pr.Addr})
			t.Cleanup(func() { _ = c.Close() })
			s.redis[pr.Shard] = c
		case "gateway":
			s.gateway = pr.Addr
		}
	}
	return runDir, s
}

// shardOf is the client of key's shard.
func (s storageOf) shardOf(key string) *redis.Client {
	r, i := s.placement.Shard(key)
	return s.redis[s.placement.Map().Storage.Racks[r].Shards[i].Name]
}

// keyValue is what the round trip compares of a key.
type keyValue struct {
	Type   string
	Value  string // a canonical rendering of the value
	HasTTL bool
}

// readKey reads key from c.
func readKey(t *testing.T, c *redis.Client, key string) keyValue {
	t.Helper()
	ctx := t.Context()
	typ := c.Type(ctx, key).Val()
	var v any
	switch typ {
	case "string":
		v = c.Get(ctx, key).Val()
	case "hash":
		v = c.HGetAll(ctx, key).Val()
	case "list":
		v = c.LRange(ctx, key, 0, -1).Val()
	case "set":
		members := c.SMembers(ctx, key).Val()
		slices.Sort(members)
		v = members
	case "zset":
		v = c.ZRangeWithScores(ctx, key, 0, -1).Val()
	}
	return keyValue{Type: typ, Value: fmt.Sprint(v), HasTTL: c.PTTL(ctx, key).Val() > 0}
}

// writeData writes n keys of each kind straight to their shards' Redis,
// where the shims read them.
func writeData(t *testing.T, s storageOf, n int) map[string]keyValue {
	t.Helper()
	ctx := t.Context()
	for i := range n {
		k := fmt.Sprintf("string-%d", i)
		if err := s.shardOf(k).Set(ctx, k, fmt.Sprintf("value %d", i), 0).Err(); err != nil {
			t.Fatal(err)
		}
		k = fmt.Sprintf("ttl-%d", i)
		if err := s.shardOf(k).Set(ctx, k, "expires", time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
		k = fmt.Sprintf("hash-%d", i)
		if err := s.shardOf(k).HSet(ctx, k, "f1", i, "f2", "two").Err(); err != nil {
			t.Fatal(err)
		}
		k = fmt.Sprintf("list-%d", i)
		if err := s.shardOf(k).RPush(ctx, k, "a", i, "c").Err(); err != nil {
			t.Fatal(err)
		}
		k = fmt.Sprintf("set-%d", i)
		if err := s.shardOf(k).SAdd(ctx, k, "x", "y", i).Err(); err != nil {
			t.Fatal(err)
		}
		k = fmt.Sprintf("zset-%d", i)
		if err := s.shardOf(k).ZAdd(ctx, k, redis.Z{Score: float64(i), Member: "m"}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]keyValue{}
	for _, c := range s.redis {
		// No wait before each transfer: Redis otherwise waits 5 s for
		// more replicas before a diskless one.
		if err := c.ConfigSet(ctx, "repl-diskless-sync-delay", "0").Err(); err != nil {
			t.Fatal(err)
		}
		for _, k := range c.Keys(ctx, "*").Val() {
			want[k] = readKey(t, c, k)
		}
	}
	if len(want) != 6*n {
		t.Fatalf("wrote %d keys, want %d", len(want), 6*n)
	}
	return want
}

// readAll reads every key of every shard of s, checking that each is on
// the shard the map places it on.
func readAll(t *testing.T, s storageOf) map[string]keyValue {
	t.Helper()
	got := map[string]keyValue{}
	for name, c := range s.redis {
		for _, k := range c.Keys(t.Context(), "*").Val() {
			if s.shardOf(k) != c {
				t.Errorf("key %q is on shard %s, not on the one the map gives it", k, name)
			}
			got[k] = readKey(t, c, k)
		}
	}
	return got
}

var setLine = regexp.MustCompile(`snapshot set (\S+): (\d+) shards`)

// TestBackupRestoreRoundTrip backs up a standalone cluster's redis-servers
// (strings, hashes, lists, sets, sorted sets, keys with a TTL), restores
// the set into new clusters of the same and of another shape, reading the
// RDB files in-process, and into one through a temporary redis-server
// (--redis-server), and compares every key; it reads the strings back
// through the new cluster's gateway.
// A restore into a cluster that holds keys, and of a set with a corrupt
// RDB, is refused.
func TestBackupRestoreRoundTrip(t *testing.T) {
	bin := buildDistcache(t)
	srcDir, src := upStorage(t, bin, backupCluster("src", 2, 2))
	want := writeData(t, src, 50)
	backups := filepath.Join(t.TempDir(), "backups")
	out, err := run(t, bin, "backup", "--run-dir", srcDir, "--out", backups, "--keep", "1")
	m := setLine.FindStringSubmatch(out)
	if err != nil || m == nil || m[2] != "4" {
		t.Fatalf("backup: %v\n%s", err, out)
	}
	set := m[1]
	if _, err := run(t, bin, "down", "--run-dir", srcDir); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name, spec string
		args       []string
	}{
		{"same shape", backupCluster("dst", 2, 2), nil},
		{"one rack of three shards", backupCluster("other", 1, 3), nil},
		{"through a temporary redis-server", backupCluster("viaserver", 2, 2), []string{"--redis-server", "redis-server"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dstDir, dst := upStorage(t, bin, tc.spec)
			out, err := run(t, bin, append([]string{"restore", "--from", set, "--run-dir", dstDir}, tc.args...)...)
			if err != nil || !strings.Contains(out, fmt.Sprintf("restored %d keys", len(want))) {
				t.Fatalf("restore: %v\n%s", err, out)
			}
			if diff := cmp.Diff(want, readAll(t, dst)); diff != "" {
				t.Fatalf("restored keys (-backed up +restored):\n%s", diff)
			}
			gw := redis.NewClient(&redis.Options{Addr: dst.gateway})
			defer gw.Close()
			for i := range 10 {
				k := fmt.Sprintf("string-%d", i)
				if got, err := gw.Get(t.Context(), k).Result(); err != nil || got != fmt.Sprintf("value %d", i) {
					t.Fatalf("GET %s through the gateway: %q, %v", k, got, err)
				}
			}
			out, err = run(t, bin, "restore", "--from", set, "--run-dir", dstDir)
			if err == nil || !strings.Contains(out, "it holds") || !strings.Contains(out, "give --force") {
				t.Fatalf("a second restore into the same cluster: %v\n%s", err, out)
			}
		})
	}

	t.Run("corrupt RDB", func(t *testing.T) {
		corrupt := filepath.Join(t.TempDir(), "corrupt")
		if err := os.CopyFS(corrupt, os.DirFS(set)); err != nil {
			t.Fatal(err)
		}
		rdb := filepath.Join(corrupt, "src-rack-1-0.rdb")
		b, err := os.ReadFile(rdb)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 0x40
		if err := os.WriteFile(rdb, b, 0o600); err != nil {
			t.Fatal(err)
		}
		dstDir, dst := upStorage(t, bin, backupCluster("dst", 2, 2))
		out, err := run(t, bin, "restore", "--from", corrupt, "--run-dir", dstDir)
		if err == nil || !strings.Contains(out, "shard src-rack-1-0: corrupt RDB: src-rack-1-0.rdb has SHA-256") {
			t.Fatalf("restore of a corrupt set: %v\n%s", err, out)
		}
		if got := readAll(t, dst); len(got) != 0 {
			t.Fatalf("the refused restore wrote %d keys", len(got))
		}
	})
	if sets, err := snapshot.Sets(backups, "src"); err != nil || len(sets) != 1 {
		t.Fatalf("sets in %s: %v, %v; want the one", backups, sets, err)
	}
}
