package snapshot_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/internal/testing/redistest"
	"github.com/distcache/distcache/snapshot"
)

// everyTypeServer starts a real redis-server that compresses strings in
// its RDB (rdbcompression yes), LZF-compresses inner quicklist nodes
// (list-compress-depth 1) and lets the test make plain quicklist nodes
// (DEBUG QUICKLIST-PACKED-THRESHOLD).
func everyTypeServer(t *testing.T) (*redistest.Server, *redis.Client) {
	t.Helper()
	srv := redistest.Start(t, redistest.WithArgs("--rdbcompression", "yes",
		"--list-compress-depth", "1", "--enable-debug-command", "yes"))
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	// No wait before the transfer: Redis otherwise waits 5 s for more
	// replicas before it starts a diskless one.
	if err := c.ConfigSet(t.Context(), "repl-diskless-sync-delay", "0").Err(); err != nil {
		t.Fatal(err)
	}
	return srv, c
}

// writeEveryType writes, in database 0 of c, keys of every type and
// encoding Redis 7 writes: small and large values (compact and plain
// encodings), integers, compressible strings and key names, keys with a
// TTL of one and of three hours, a stream with a consumer group, and a
// function library; and one key in database 1. It returns the names of
// the keys of database 0.
func writeEveryType(t *testing.T, c *redis.Client) []string {
	t.Helper()
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(1, 2))
	random := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return string(b)
	}
	many := func(n int, f func(i int) any) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = f(i)
		}
		return out
	}
	cmds := [][]any{
		{"SET", "str:small", "hello"},
		{"SET", "str:int8", "-7"},
		{"SET", "str:int16", "30000"},
		{"SET", "str:int32", "-2000000000"},
		{"SET", "str:int64", "9000000000000"},
		{"SET", "str:compressible", strings.Repeat("abcd", 2000)},
		{"SET", "str:random", random(5000)},
		{"SET", "str:empty", ""},
		{"SET", "42", "a key that is an integer"},
		{"SET", "-100000", "a key that is a 32-bit integer"},
		{"SET", strings.Repeat("long-key-", 30), "a compressible key name"},
		{"SET", "ttl:1h", "one hour", "PX", time.Hour.Milliseconds()},
		{"SET", "ttl:3h", "three hours", "PX", (3 * time.Hour).Milliseconds()},
		append([]any{"RPUSH", "list:small"}, many(5, func(i int) any { return i })...),
		append([]any{"RPUSH", "list:large"}, many(3000, func(i int) any { return fmt.Sprintf("element %d %s", i, strings.Repeat("x", i%50)) })...),
		{"RPUSH", "list:mixed", "a", 1, strings.Repeat("z", 200), -5, 1 << 40},
		append([]any{"SADD", "set:intset"}, many(10, func(i int) any { return i * 1000 })...),
		append([]any{"SADD", "set:intset-large"}, many(1000, func(i int) any { return i - 500 })...),
		{"SADD", "set:small", "red", "green", "blue"},
		append([]any{"SADD", "set:large"}, many(1000, func(i int) any { return fmt.Sprintf("member-%d", i) })...),
		{"ZADD", "zset:small", 1, "one", 2.5, "two and a half", "-inf", "minus infinity"},
		append([]any{"ZADD", "zset:large"}, many(600, func(i int) any {
			if i%2 == 0 {
				return float64(i) * math.Pi
			}
			return fmt.Sprintf("member-%d", i)
		})...),
		{"ZADD", "zset:long-member", 1, strings.Repeat("m", 100)},
		{"HSET", "hash:small", "f1", "v1", "f2", 2},
		append([]any{"HSET", "hash:large"}, many(600, func(i int) any { return fmt.Sprintf("field-%d", i) })...),
		{"HSET", "hash:long-value", "f", strings.Repeat("v", 100)},
		{"FUNCTION", "LOAD", "#!lua name=restorelib\nredis.register_function('restorefn', function() return 1 end)"},
	}
	for i := range 20 {
		cmds = append(cmds, []any{"XADD", "stream", fmt.Sprintf("1-%d", i+1), "field", i, "other", strings.Repeat("s", i)})
	}
	cmds = append(cmds,
		[]any{"XGROUP", "CREATE", "stream", "group", "0"},
		[]any{"XREADGROUP", "GROUP", "group", "alice", "COUNT", 3, "STREAMS", "stream", ">"},
		[]any{"XREADGROUP", "GROUP", "group", "bob", "COUNT", 2, "STREAMS", "stream", ">"},
		[]any{"XACK", "stream", "group", "1-1"},
		[]any{"XDEL", "stream", "1-10"},
		[]any{"XGROUP", "CREATE", "stream", "idle-group", "$"},
		// A plain quicklist node: an element above the packed threshold.
		[]any{"DEBUG", "QUICKLIST-PACKED-THRESHOLD", 1000},
		[]any{"RPUSH", "list:plain", "small", strings.Repeat("p", 3000), "small again"},
		[]any{"DEBUG", "QUICKLIST-PACKED-THRESHOLD", 1 << 30},
	)
	for _, cmd := range cmds {
		if err := c.Do(ctx, cmd...).Err(); err != nil {
			t.Fatalf("%v: %v", cmd[:2], err)
		}
	}
	one := redis.NewClient(&redis.Options{Addr: c.Options().Addr, DB: 1})
	defer one.Close()
	if err := one.Set(ctx, "db1:key", "not restored", 0).Err(); err != nil {
		t.Fatal(err)
	}
	keys, err := c.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// takeRDB takes a one-shard snapshot set of srv and returns its RDB file.
func takeRDB(t *testing.T, srv *redistest.Server) string {
	t.Helper()
	dir, m, err := snapshot.Take(t.Context(), snapshot.TakeOptions{
		Cluster: "every", Racks: 1, ShardsPerRack: 1, Root: t.TempDir(),
		Source: func(r, s int) snapshot.Source { return snapshot.Source{Addr: srv.Addr()} },
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir + "/" + m.Shards[0].File
}
