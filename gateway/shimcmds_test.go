package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/dataplane/cachenode"
	"github.com/distcache/distcache/hotkey"
	"github.com/distcache/distcache/internal/testing/clustertest"
	"github.com/distcache/distcache/internal/testing/poll"
)

// TestCommandsOfOtherTypes sends hash, list, set, sorted-set and expiry
// commands through the gateway with go-redis over RESP2 and RESP3, and
// checks Redis' answers, the WRONGTYPE errors of a key used as another
// type, and MGET and EXISTS over keys of other types.
func TestCommandsOfOtherTypes(t *testing.T) {
	addr, _ := startGateway(t)
	for _, proto := range []int{2, 3} {
		rc := redisClient(t, addr, proto)
		ctx := context.Background()
		p := func(k string) string { return k + "-" + string(rune('0'+proto)) }
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("RESP%d: %v", proto, err)
			}
		}
		h, l, s, z, str := p("user"), p("queue"), p("tags"), p("board"), p("plain")
		n, err := rc.HSet(ctx, h, "name", "ada", "visits", "1").Result()
		must(err)
		if n != 2 {
			t.Errorf("RESP%d: HSET added %d fields, want 2", proto, n)
		}
		v, err := rc.HIncrBy(ctx, h, "visits", 41).Result()
		must(err)
		all, err := rc.HGetAll(ctx, h).Result()
		must(err)
		if v != 42 || all["name"] != "ada" || all["visits"] != "42" || len(all) != 2 {
			t.Errorf("RESP%d: HINCRBY %d, HGETALL %v", proto, v, all)
		}
		must(rc.RPush(ctx, l, "a", "b", "c").Err())
		items, err := rc.LRange(ctx, l, 0, -1).Result()
		must(err)
		popped, err := rc.LPop(ctx, l).Result()
		must(err)
		if !slices.Equal(items, []string{"a", "b", "c"}) || popped != "a" {
			t.Errorf("RESP%d: LRANGE %q, LPOP %q", proto, items, popped)
		}
		must(rc.SAdd(ctx, s, "x", "y", "x").Err())
		card, err := rc.SCard(ctx, s).Result()
		must(err)
		member, err := rc.SIsMember(ctx, s, "y").Result()
		must(err)
		if card != 2 || !member {
			t.Errorf("RESP%d: SCARD %d, SISMEMBER %v", proto, card, member)
		}
		must(rc.ZAdd(ctx, z, redis.Z{Score: 2, Member: "b"}, redis.Z{Score: 1, Member: "a"}).Err())
		zs, err := rc.ZRangeWithScores(ctx, z, 0, -1).Result()
		must(err)
		score, err := rc.ZScore(ctx, z, "b").Result()
		must(err)
		if len(zs) != 2 || zs[0].Member != "a" || zs[1].Score != 2 || score != 2 {
			t.Errorf("RESP%d: ZRANGE WITHSCORES %v, ZSCORE %v", proto, zs, score)
		}
		typ, err := rc.Type(ctx, z).Result()
		must(err)
		if typ != "zset" {
			t.Errorf("RESP%d: TYPE %q, want zset", proto, typ)
		}

		// A key of another type than the command's.
		wrong := func(what string, err error) {
			t.Helper()
			if err == nil || err.Error() != "WRONGTYPE Operation against a key holding the wrong kind of value" {
				t.Errorf("RESP%d: %s of a hash: %v, want WRONGTYPE", proto, what, err)
			}
		}
		wrong("GET", rc.Get(ctx, h).Err())
		wrong("INCR", rc.Incr(ctx, h).Err())
		wrong("APPEND", rc.Append(ctx, h, "x").Err())
		wrong("LPUSH", rc.LPush(ctx, h, "x").Err())
		must(rc.Set(ctx, str, "v", 0).Err())
		wrong("HGET", rc.HGet(ctx, str, "f").Err())
		vals, err := rc.MGet(ctx, str, h, p("missing")).Result()
		must(err)
		if len(vals) != 3 || vals[0] != "v" || vals[1] != nil || vals[2] != nil {
			t.Errorf("RESP%d: MGET of a string, a hash and a missing key: %v, want [v <nil> <nil>]", proto, vals)
		}
		exists, err := rc.Exists(ctx, str, h, l, p("missing")).Result()
		must(err)
		if exists != 3 {
			t.Errorf("RESP%d: EXISTS counted %d of a string, a hash, a list and a missing key, want 3", proto, exists)
		}
		// SETNX of a hash: not set, and the hash stays.
		set, err := rc.SetNX(ctx, h, "v", 0).Result()
		must(err)
		if typ, _ := rc.Type(ctx, h).Result(); set || typ != "hash" {
			t.Errorf("RESP%d: SETNX of a hash set %v, TYPE %s afterwards", proto, set, typ)
		}
		// A plain SET replaces any type, as in Redis.
		must(rc.Set(ctx, h, "now a string", 0).Err())
		if got, err := rc.Get(ctx, h).Result(); err != nil || got != "now a string" {
			t.Errorf("RESP%d: GET after SET over a hash: %q, %v", proto, got, err)
		}
		if err := rc.Do(ctx, "hget", h).Err(); err == nil || err.Error() != "ERR wrong number of arguments for 'hget' command" {
			t.Errorf("RESP%d: HGET without a field: %v", proto, err)
		}
	}
}

// TestCommandsOnACachedKey: a hot key cached by the nodes gets an expiry
// from EXPIRE. Its reads return the value until PEXPIRE runs it out and
// nothing after; TTL reports the expiry; PERSIST makes it cacheable again
// (reads hit again). Then GETDEL and HSET turn it into a hash: GET answers
// WRONGTYPE, never a cached copy.
func TestCommandsOnACachedKey(t *testing.T) {
	addr, _, c := startGatewayOn(t, clustertest.Config{Name: "cmds", Racks: 1, ShardsPerRack: 1, Spine: 1,
		Node: func(n *cachenode.Config) {
			n.Interval = 20 * time.Millisecond
			n.Detector = hotkey.Config{Threshold: 3, SketchWidth: 1024, BloomBits: 4096}
		}})
	rc := redisClient(t, addr, 2)
	ctx, key := t.Context(), "cmd:hot"
	hitsNow := func() int {
		info, err := rc.Info(ctx, "distcache").Result()
		if err != nil {
			t.Fatal(err)
		}
		return cacheHits(info)
	}
	cached := func(what string) {
		t.Helper()
		hits := hitsNow()
		poll.Eventually(t, what, func() (bool, error) {
			for range 20 { // enough misses in an insertion interval to be hot
				if err := rc.Get(ctx, key).Err(); err != nil {
					return false, err
				}
			}
			info, err := rc.Info(ctx, "distcache").Result()
			return err == nil && hitsAbove(info, hits+10), err
		})
	}
	if err := rc.Set(ctx, key, "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	cached("the key cached")
	if ok, err := rc.Expire(ctx, key, time.Hour).Result(); err != nil || !ok {
		t.Fatalf("EXPIRE: %v, %v", ok, err)
	}
	if ttl, err := rc.TTL(ctx, key).Result(); err != nil || ttl <= 0 || ttl > time.Hour {
		t.Fatalf("TTL after EXPIRE 3600: %v, %v", ttl, err)
	}
	if ok, err := rc.ExpireNX(ctx, key, time.Minute).Result(); err != nil || ok {
		t.Errorf("EXPIRE NX of a key with an expiry: %v, %v; want false", ok, err)
	}
	before := hitsNow()
	poll.Within(t, "a fill of the key refused", time.Minute, func() (bool, error) {
		for range 20 {
			if got, err := rc.Get(ctx, key).Result(); err != nil || got != "v" {
				t.Fatalf("GET of a key with an expiry: %q, %v", got, err)
			}
		}
		var refused uint64
		for _, s := range c.Shims {
			refused += s.Stats().Uncacheable
		}
		return refused > 0, nil
	})
	if after := hitsNow(); after != before {
		t.Errorf("%d reads of a key with an expiry hit a cache", after-before)
	}
	if ok, err := rc.Persist(ctx, key).Result(); err != nil || !ok {
		t.Fatalf("PERSIST: %v, %v", ok, err)
	}
	cached("the key cached again after PERSIST")
	if ok, err := rc.PExpire(ctx, key, 200*time.Millisecond).Result(); err != nil || !ok {
		t.Fatalf("PEXPIRE: %v, %v", ok, err)
	}
	poll.Within(t, "the key expired", time.Minute, func() (bool, error) {
		v, err := rc.Get(ctx, key).Result()
		switch {
		case errors.Is(err, redis.Nil):
			return true, nil
		case err != nil:
			return false, err
		case v != "v":
			t.Fatalf("read after PEXPIRE returned %q", v)
		}
		return false, nil
	})
	if err := rc.Set(ctx, key, "w", 0).Err(); err != nil {
		t.Fatal(err)
	}
	cached("the key cached a third time")
	if got, err := rc.GetDel(ctx, key).Result(); err != nil || got != "w" {
		t.Fatalf("GETDEL: %q, %v", got, err)
	}
	if err := rc.HSet(ctx, key, "f", "1").Err(); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if v, err := rc.Get(ctx, key).Result(); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
			t.Fatalf("read %d of the key turned into a hash: %q, %v; want WRONGTYPE", i, v, err)
		}
	}
}

// TestPipelinedCommandsKeepOrder sends pipelines of commands of other
// types, on distinct keys (an event loop's round) and on one key (run in
// order), through the shims and directly: every reply is what running the
// commands one by one gives.
func TestPipelinedCommandsKeepOrder(t *testing.T) {
	for _, direct := range []bool{false, true} {
		addr, _, _ := startGatewayOn(t, clustertest.Config{Name: "pipe", Racks: 2, ShardsPerRack: 1, Spine: 2,
			DirectReads: direct, DirectWrites: direct})
		rc := redisClient(t, addr, 3)
		ctx := t.Context()
		p := fmt.Sprintf("pipe-%v:", direct)
		pipe := rc.Pipeline()
		var adds []*redis.IntCmd
		for i := range 20 { // distinct keys: one round
			adds = append(adds, pipe.RPush(ctx, p+"list"+strconv.Itoa(i), i, i+1))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		for i, a := range adds {
			if a.Val() != 2 {
				t.Errorf("direct %v: RPUSH %d = %d, want 2", direct, i, a.Val())
			}
		}
		pipe = rc.Pipeline()
		k := p + "hash"
		set := pipe.HSet(ctx, k, "n", 1)
		incr := pipe.HIncrBy(ctx, k, "n", 10)
		get := pipe.HGet(ctx, k, "n")
		del := pipe.HDel(ctx, k, "n")
		again := pipe.HGet(ctx, k, "n")
		str := pipe.Set(ctx, p+"s", "v", 0)
		typ := pipe.Type(ctx, p+"s")
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			t.Fatal(err)
		}
		if set.Val() != 1 || incr.Val() != 11 || get.Val() != "11" || del.Val() != 1 || !errors.Is(again.Err(), redis.Nil) ||
			str.Err() != nil || typ.Val() != "string" {
			t.Errorf("direct %v: one key's pipeline: HSET %d, HINCRBY %d, HGET %q, HDEL %d, HGET %v, SET %v, TYPE %q",
				direct, set.Val(), incr.Val(), get.Val(), del.Val(), again.Err(), str.Err(), typ.Val())
		}
	}
}

// TestConfigSetOfEncodingLimits: CONFIG SET of an encoding limit reaches
// every shard's Redis where the gateway reads storage itself, and CONFIG
// GET reads it back; save and appendonly may be set to the value every
// shard has (nothing changes) and to no other; other parameters, and a
// gateway without direct reads, get an error.
func TestConfigSetOfEncodingLimits(t *testing.T) {
	for _, direct := range []bool{false, true} {
		addr, _, c := startGatewayOn(t, clustertest.Config{Name: "conf", Racks: 2, ShardsPerRack: 1, Spine: 1,
			DirectReads: direct, DirectWrites: direct})
		rc := redisClient(t, addr, 2)
		err := rc.ConfigSet(t.Context(), "hash-max-listpack-entries", "7").Err()
		if !direct {
			if err == nil || !strings.Contains(err.Error(), "direct reads are off") {
				t.Errorf("CONFIG SET without direct reads: %v", err)
			}
			if got, err := rc.ConfigGet(t.Context(), "save").Result(); err != nil || len(got) != 0 {
				t.Errorf("CONFIG GET save without direct reads: %v, %v; want nothing", got, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("CONFIG SET hash-max-listpack-entries: %v", err)
		}
		shardConfig := func(name string) []string {
			var out []string
			for _, r := range c.Redis {
				shard := redis.NewClient(&redis.Options{Addr: r.Addr()})
				got, err := shard.ConfigGet(t.Context(), name).Result()
				_ = shard.Close()
				if err != nil {
					t.Fatalf("Redis at %s: CONFIG GET %s: %v", r.Addr(), name, err)
				}
				out = append(out, got[name])
			}
			return out
		}
		if got := shardConfig("hash-max-listpack-entries"); !slices.Equal(got, []string{"7", "7"}) {
			t.Errorf("shards' hash-max-listpack-entries: %q, want 7 on each", got)
		}
		appendOnly := shardConfig("appendonly")[0]
		for _, tc := range []struct {
			name string
			args []any
			// want is the reply, or the start of the error's text.
			want string
		}{
			{"get an encoding limit", []any{"config", "get", "hash-max-listpack-entries"}, "[hash-max-listpack-entries 7]"},
			{"get by a pattern", []any{"config", "get", "HASH-MAX-LISTPACK-*"}, "[hash-max-listpack-entries 7 hash-max-listpack-value 64]"},
			{"get save", []any{"config", "get", "save"}, "[save ]"},
			{"get what the gateway does not show", []any{"config", "get", "requirepass"}, "[]"},
			{"set save to the shards' value", []any{"config", "set", "save", ""}, "OK"},
			{"set appendonly to the shards' value", []any{"config", "set", "appendonly", strings.ToUpper(appendOnly)}, "OK"},
			{"set save to another value", []any{"config", "set", "save", "900 1"},
				"ERR CONFIG SET of 'save' is not supported by the DistCache gateway: the cluster's operator sets it (to ''"},
			{"set an encoding limit and save to another value", []any{"config", "set", "hash-max-listpack-entries", "9", "save", "60 1"},
				"ERR CONFIG SET of 'save' is not supported"},
			{"set an operator's parameter", []any{"config", "set", "maxmemory", "1"},
				"ERR CONFIG SET of 'maxmemory' is not supported by the DistCache gateway: only the encoding limits"},
		} {
			got, err := rc.Do(t.Context(), tc.args...).Result()
			reply := fmt.Sprint(got)
			if err != nil {
				reply = err.Error()
			}
			if !strings.HasPrefix(reply, tc.want) {
				t.Errorf("%s: %q, want %q", tc.name, reply, tc.want)
			}
		}
		if got := shardConfig("save"); !slices.Equal(got, []string{"", ""}) {
			t.Errorf("shards' save after the refused CONFIG SET: %q, want unchanged", got)
		}
		if got := shardConfig("hash-max-listpack-entries"); !slices.Equal(got, []string{"7", "7"}) {
			t.Errorf("shards' hash-max-listpack-entries after a refused CONFIG SET: %q, want 7 on each", got)
		}
	}
}
