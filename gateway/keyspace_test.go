package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/dataplane/cachenode"
	"github.com/distcache/distcache/dataplane/heldkeys"
	"github.com/distcache/distcache/dataplane/shim"
	"github.com/distcache/distcache/hotkey"
	"github.com/distcache/distcache/internal/testing/clustertest"
	"github.com/distcache/distcache/internal/testing/poll"
)

// ownKey is a key of the cluster's own that the tests put in every
// shard's Redis, beside the shims' (distcache:held, distcache:applied:*).
const ownKey = "distcache:test:own"

// keyspaceCluster starts a gateway with direct reads, and direct writes
// if directWrites, in front of four shards, writes n keys of several
// types through it and an own key into every shard's Redis, and returns
// the gateway's client, the cluster and the keys by type.
func keyspaceCluster(t *testing.T, n int, directWrites bool) (*redis.Client, *clustertest.Cluster, map[string]string) {
	t.Helper()
	addr, _, c := startGatewayOn(t, clustertest.Config{Name: "ks", Racks: 2, ShardsPerRack: 2, Spine: 1,
		DirectReads: true, DirectWrites: directWrites})
	rc := redisClient(t, addr, 2)
	ctx := t.Context()
	keys := map[string]string{}
	pipe := rc.Pipeline()
	for i := range n {
		k := fmt.Sprintf("ks:%d", i)
		switch i % 3 {
		case 0, 1:
			pipe.Set(ctx, k, "v", 0)
			keys[k] = "string"
		case 2:
			pipe.HSet(ctx, k, "f", "v")
			keys[k] = "hash"
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	shards := map[string]bool{}
	for k := range keys {
		shards[c.ShardOf(k)] = true
	}
	if len(shards) != len(c.Redis) {
		t.Fatalf("the keys are in %d shards of %d", len(shards), len(c.Redis))
	}
	for _, srv := range c.Redis {
		shard := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		err := shard.Set(ctx, ownKey, "x", 0).Err()
		_ = shard.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	return rc, c, keys
}

// scanAll walks SCAN with args (after the cursor) from cursor 0 to 0 and
// returns every key it answered, counted.
func scanAll(t *testing.T, rc *redis.Client, limit int, args ...any) map[string]int {
	t.Helper()
	seen := map[string]int{}
	cursor := "0"
	for range limit {
		r, err := rc.Do(t.Context(), append([]any{"scan", cursor}, args...)...).Slice()
		if err != nil {
			t.Fatalf("SCAN %s %v: %v", cursor, args, err)
		}
		cursor = r[0].(string)
		for _, k := range r[1].([]any) {
			seen[k.(string)]++
		}
		if cursor == "0" {
			return seen
		}
	}
	t.Fatalf("SCAN %v did not end within %d calls", args, limit)
	return nil
}

// TestKeyspaceCommands: DBSIZE, KEYS, SCAN and RANDOMKEY see the keys of
// every shard and none of the cluster's own; SCAN's cursor walks every
// key, with MATCH, COUNT and TYPE. Writes through the shims leave their
// marks (distcache:applied:*), direct writes none.
func TestKeyspaceCommands(t *testing.T) {
	for _, direct := range []bool{false, true} {
		t.Run(map[bool]string{false: "writes through the shims", true: "direct writes"}[direct], func(t *testing.T) {
			keyspaceCommands(t, direct)
		})
	}
}

func keyspaceCommands(t *testing.T, directWrites bool) {
	const n = 300
	rc, c, keys := keyspaceCluster(t, n, directWrites)
	ctx := t.Context()
	marks := 0
	for _, srv := range c.Redis {
		for _, k := range shardKeys(ctx, t, srv.Addr()) {
			if strings.HasPrefix(k, shim.AppliedPrefix) {
				marks++
			}
		}
	}
	if (marks > 0) == directWrites {
		t.Fatalf("%d marks of applied writes in the shards", marks)
	}
	want := func(match func(k, typ string) bool) []string {
		var out []string
		for k, typ := range keys {
			if match(k, typ) {
				out = append(out, k)
			}
		}
		slices.Sort(out)
		return out
	}
	all := want(func(string, string) bool { return true })
	if size, err := rc.DBSize(ctx).Result(); err != nil || size != n {
		t.Errorf("DBSIZE: %d, %v; want %d", size, err, n)
	}
	for _, tc := range []struct {
		pattern string
		want    []string
	}{
		{"*", all},
		{"ks:1*", want(func(k, _ string) bool { return strings.HasPrefix(k, "ks:1") })},
		{"ks:?", want(func(k, _ string) bool { return len(k) == 4 })},
		{"distcache:*", nil},
		{"nothing*", nil},
		{"", nil},
	} {
		got, err := rc.Keys(ctx, tc.pattern).Result()
		slices.Sort(got)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("KEYS %s: %d keys (%v), want %d", tc.pattern, len(got), err, len(tc.want))
		}
	}
	for _, tc := range []struct {
		args []any
		want []string
	}{
		{nil, all},
		{[]any{"COUNT", 1}, all},
		{[]any{"COUNT", 7}, all},
		{[]any{"COUNT", 1000}, all},
		{[]any{"MATCH", "ks:2*", "COUNT", 20}, want(func(k, _ string) bool { return strings.HasPrefix(k, "ks:2") })},
		{[]any{"TYPE", "hash"}, want(func(_, typ string) bool { return typ == "hash" })},
		{[]any{"match", "distcache:*"}, nil},
		{[]any{"MATCH", ""}, nil},
	} {
		seen := scanAll(t, rc, 10*n, tc.args...)
		got := slices.Sorted(maps.Keys(seen))
		if !slices.Equal(got, tc.want) {
			t.Errorf("SCAN %v walked %d keys, want %d", tc.args, len(got), len(tc.want))
		}
	}
	// go-redis's iterator reads the cursor as an unsigned integer.
	it, iterated := rc.Scan(ctx, 0, "ks:*", 5).Iterator(), map[string]bool{}
	for it.Next(ctx) {
		iterated[it.Val()] = true
	}
	if got := slices.Sorted(maps.Keys(iterated)); it.Err() != nil || !slices.Equal(got, all) {
		t.Errorf("go-redis's SCAN iterator: %d keys (%v), want %d", len(got), it.Err(), len(all))
	}
	for range 50 {
		k, err := rc.RandomKey(ctx).Result()
		if _, ok := keys[k]; err != nil || !ok {
			t.Fatalf("RANDOMKEY: %q, %v; want one of the keys written", k, err)
		}
	}
}

// TestKeyspaceErrors: the keyspace commands' syntax errors are Redis',
// and without direct reads they answer an error.
func TestKeyspaceErrors(t *testing.T) {
	rc, _, _ := keyspaceCluster(t, 40, true)
	addr, _, _ := startGatewayOn(t, clustertest.Config{Name: "nodirect", Racks: 1, ShardsPerRack: 1, Spine: 1})
	noDirect := redisClient(t, addr, 2)
	for _, tc := range []struct {
		rc   *redis.Client
		args []any
		want string
	}{
		{rc, []any{"scan", "x"}, "ERR invalid cursor"},
		{rc, []any{"scan", "0", "COUNT", "0"}, "ERR syntax error"},
		{rc, []any{"scan", "0", "COUNT", "many"}, "ERR value is not an integer or out of range"},
		{rc, []any{"scan", "0", "MATCH"}, "ERR syntax error"},
		{rc, []any{"scan", "0", "LIMIT", "1"}, "ERR syntax error"},
		{rc, []any{"flushall", "now"}, "ERR syntax error"},
		{rc, []any{"flushdb", "sync", "async"}, "ERR syntax error"},
		{rc, []any{"dbsize", "x"}, "ERR wrong number of arguments for 'dbsize' command"},
		{rc, []any{"keys"}, "ERR wrong number of arguments for 'keys' command"},
		{noDirect, []any{"dbsize"}, "direct reads are off"},
		{noDirect, []any{"keys", "*"}, "direct reads are off"},
		{noDirect, []any{"scan", "0"}, "direct reads are off"},
		{noDirect, []any{"randomkey"}, "direct reads are off"},
		{noDirect, []any{"flushall"}, "direct reads are off"},
	} {
		err := tc.rc.Do(t.Context(), tc.args...).Err()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
	// A cursor past the last shard ends the walk.
	r, err := rc.Do(t.Context(), "scan", fmt.Sprint(1<<16-1)).Slice()
	if err != nil || r[0] != "0" || len(r[1].([]any)) != 0 {
		t.Errorf("SCAN of a shard past the last: %v, %v", r, err)
	}
}

// TestFlushAll: FLUSHALL and FLUSHDB, SYNC or ASYNC, empty every shard
// but for the cluster's own keys, and a key that a cache node held is
// not read from it afterwards.
func TestFlushAll(t *testing.T) {
	for _, args := range [][]any{{"flushall"}, {"flushall", "async"}, {"FLUSHDB"}, {"flushdb", "SYNC"}} {
		t.Run(fmt.Sprint(args...), func(t *testing.T) { flushAll(t, args) })
	}
}

func flushAll(t *testing.T, args []any) {
	addr, _, c := startGatewayOn(t, clustertest.Config{Name: "flush", Racks: 2, ShardsPerRack: 1, Spine: 1,
		DirectReads: true, DirectWrites: true,
		Node: func(n *cachenode.Config) {
			n.Interval = 20 * time.Millisecond
			n.Detector = hotkey.Config{Threshold: 3, SketchWidth: 1024, BloomBits: 4096}
		}})
	rc := redisClient(t, addr, 2)
	ctx, hot := t.Context(), "flush:hot"
	for i := range 100 {
		if err := rc.Set(ctx, fmt.Sprintf("flush:%d", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := rc.Set(ctx, hot, "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	hits := func() int {
		info, err := rc.Info(ctx, "distcache").Result()
		if err != nil {
			t.Fatal(err)
		}
		return cacheHits(info)
	}
	before := hits()
	poll.Eventually(t, "the hot key cached", func() (bool, error) {
		for range 20 { // enough reads in an insertion interval to be hot
			if err := rc.Get(ctx, hot).Err(); err != nil {
				return false, err
			}
		}
		return hits() > before+10, nil
	})
	if err := rc.Do(ctx, args...).Err(); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	for i := range 100 {
		if v, err := rc.Get(ctx, hot).Result(); !errors.Is(err, redis.Nil) {
			t.Fatalf("read %d of the cached key after %v: %q, %v; want nil", i, args, v, err)
		}
	}
	if size, err := rc.DBSize(ctx).Result(); err != nil || size != 0 {
		t.Errorf("DBSIZE after %v: %d, %v", args, size, err)
	}
	rc3 := redisClient(t, addr, 3)
	if k, err := rc3.RandomKey(ctx).Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("RANDOMKEY over RESP3 after %v: %q, %v; want null", args, k, err)
	}
	if keys, cursor, err := rc3.Scan(ctx, 0, "", 100).Result(); err != nil || len(keys) != 0 || cursor != 0 {
		t.Errorf("SCAN over RESP3 after %v: %v, cursor %d, %v", args, keys, cursor, err)
	}
	for name, srv := range c.Redis {
		left := shardKeys(ctx, t, srv.Addr())
		for _, k := range left {
			if !strings.HasPrefix(k, "distcache:") {
				t.Errorf("shard %s keeps %q after %v", name, k, args)
			}
		}
		if name == c.ShardOf(hot) && !slices.Contains(left, heldkeys.Key) {
			t.Errorf("shard %s lost %s: %v", name, heldkeys.Key, left)
		}
	}
	if err := rc.Set(ctx, hot, "again", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := rc.Get(ctx, hot).Result(); err != nil || v != "again" {
		t.Errorf("GET after a SET that followed %v: %q, %v", args, v, err)
	}
}

// shardKeys is KEYS * of the Redis at addr.
func shardKeys(ctx context.Context, t *testing.T, addr string) []string {
	t.Helper()
	shard := redis.NewClient(&redis.Options{Addr: addr})
	defer func() { _ = shard.Close() }()
	keys, err := shard.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// TestKeyspacePipelineKeepsOrder: the commands on the whole keyspace run
// in a pipeline after the commands before them and before those after.
func TestKeyspacePipelineKeepsOrder(t *testing.T) {
	rc, _, _ := keyspaceCluster(t, 40, true)
	ctx := t.Context()
	pipe := rc.Pipeline()
	cmds := []redis.Cmder{pipe.Set(ctx, "order:a", "1", 0), pipe.FlushAll(ctx), pipe.Get(ctx, "order:a"),
		pipe.Set(ctx, "order:b", "2", 0), pipe.DBSize(ctx), pipe.Keys(ctx, "*"), pipe.Del(ctx, "order:b"), pipe.DBSize(ctx)}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cmds {
		if errors.Is(c.Err(), redis.Nil) {
			got = append(got, "nil")
			continue
		}
		switch c := c.(type) {
		case *redis.StatusCmd:
			got = append(got, c.Val())
		case *redis.StringCmd:
			got = append(got, c.Val())
		case *redis.IntCmd:
			got = append(got, fmt.Sprint(c.Val()))
		case *redis.StringSliceCmd:
			got = append(got, fmt.Sprint(c.Val()))
		}
	}
	if want := "OK OK nil OK 1 [order:b] 1 0"; strings.Join(got, " ") != want {
		t.Errorf("pipeline replies\n%s\nwant\n%s", strings.Join(got, " "), want)
	}
}
