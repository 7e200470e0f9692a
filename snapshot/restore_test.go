package snapshot_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/dataplane/heldkeys"
	"github.com/distcache/distcache/dataplane/shim"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/snapshot"
)

// TestRestoreFromRDBRoundTrip restores a real Redis's RDB, with every type
// and encoding, into two new shards without a redis-server to read it, and
// compares every key's DUMP and expiry with the source's. The shims'
// internal keys and the key of database 1 are left out; the key whose
// expiry is before the restore's clock is counted as expired.
func TestRestoreFromRDBRoundTrip(t *testing.T) {
	ctx := t.Context()
	srv, c := everyTypeServer(t)
	keys := writeEveryType(t, c)
	for _, k := range []string{heldkeys.Key, shim.AppliedPrefix + "writer-1"} {
		if err := c.Set(ctx, k, "internal", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Dir(takeRDB(t, srv))

	m, err := partmap.Build(partmap.Spec{Cluster: "dst", Racks: 1, ShardsPerRack: 2,
		Layers: []partmap.LayerSpec{{Name: "spine", Nodes: 1}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := partmap.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	shards := make([]*redis.Client, 2)
	for s := range shards {
		_, shards[s] = everyTypeServer(t)
	}
	// The restore runs two hours ahead: ttl:1h has expired by then,
	// ttl:3h not.
	ahead := time.Now().Add(2 * time.Hour)
	res, err := snapshot.Restore(ctx, snapshot.RestoreOptions{
		Dir: dir, Placement: p, Now: func() time.Time { return ahead },
		Target: func(r, s int) *redis.Options { return shards[s].Options() },
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := (snapshot.RestoreResult{Keys: len(keys) - 1, Internal: 2, Expired: 1}); res != want {
		t.Fatalf("restore result %+v, want %+v", res, want)
	}
	for _, key := range keys {
		_, s := p.Shard(key)
		got, err := shards[s].Dump(ctx, key).Result()
		if key == "ttl:1h" {
			if err != redis.Nil {
				t.Errorf("expired key %q restored: %v", key, err)
			}
			continue
		}
		// A hash table's order depends on its server's hash seed: compare
		// those by content, every other value by its DUMP.
		if want := c.Dump(ctx, key).Val(); err != nil || got != want {
			if gotV, wantV := content(t, shards[s], key), content(t, c, key); gotV == "" || gotV != wantV {
				t.Errorf("key %q on shard %d: %q (%v), want the source's %q", key, s, gotV, err, wantV)
			}
		}
		ttl := shards[s].PTTL(ctx, key).Val()
		switch {
		case key == "ttl:3h" && ttl < 2*time.Hour:
			t.Errorf("key %q: PTTL %v, want the source's expiry about 3h from now", key, ttl)
		case key != "ttl:3h" && ttl != -1:
			t.Errorf("key %q: PTTL %v, want none", key, ttl)
		}
	}
	for s, sh := range shards {
		if n := sh.DBSize(ctx).Val(); n == 0 {
			t.Errorf("shard %d holds no key: the placement put every key on one shard", s)
		}
		for _, k := range []string{heldkeys.Key, shim.AppliedPrefix + "writer-1"} {
			if sh.Exists(ctx, k).Val() != 0 {
				t.Errorf("internal key %q restored into shard %d", k, s)
			}
		}
		one := redis.NewClient(&redis.Options{Addr: sh.Options().Addr, DB: 1})
		if n := one.DBSize(ctx).Val(); n != 0 {
			t.Errorf("shard %d: %d keys in database 1, want none", s, n)
		}
		_ = one.Close()
	}
}

// content renders a set's or a hash's members in order; "" for any other
// type.
func content(t *testing.T, c *redis.Client, key string) string {
	t.Helper()
	var v []string
	switch c.Type(t.Context(), key).Val() {
	case "set":
		v = c.SMembers(t.Context(), key).Val()
	case "hash":
		for f, x := range c.HGetAll(t.Context(), key).Val() {
			v = append(v, f+"="+x)
		}
	default:
		return ""
	}
	slices.Sort(v)
	return fmt.Sprint(v)
}
