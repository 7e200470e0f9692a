package gateway_test

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/dataplane/cachenode"
	"github.com/distcache/distcache/hotkey"
	"github.com/distcache/distcache/internal/testing/clustertest"
	"github.com/distcache/distcache/internal/testing/poll"
)

// txCluster is a cluster whose gateway runs transactions and scripts:
// direct reads and writes, keys placed by their hash tags, two shards, and
// nodes that cache a key after a few reads.
var txCluster = clustertest.Config{Name: "tx", Racks: 2, ShardsPerRack: 1, Spine: 1,
	DirectReads: true, DirectWrites: true, HashTags: true,
	Node: func(n *cachenode.Config) {
		n.Interval = 20 * time.Millisecond
		n.Detector = hotkey.Config{Threshold: 3, SketchWidth: 1024, BloomBits: 4096}
	}}

// TestTransactions runs MULTI and EXEC, DISCARD, WATCH, and the errors of
// each, through the gateway, over RESP2 and RESP3.
func TestTransactions(t *testing.T) {
	addr, _, _ := startGatewayOn(t, txCluster)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			rc, other := redisClient(t, addr, proto), redisClient(t, addr, proto)
			ctx := t.Context()
			p := fmt.Sprintf("{p%d}", proto)
			cmds, err := rc.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
				pipe.Set(ctx, p+"a", "1", 0)
				pipe.Incr(ctx, p+"a")
				pipe.HSet(ctx, p+"h", "f", "v")
				pipe.Get(ctx, p+"a")
				pipe.HGetAll(ctx, p+"h")
				return nil
			})
			if err != nil {
				t.Fatalf("MULTI ... EXEC: %v", err)
			}
			if got := cmds[3].(*redis.StringCmd).Val(); got != "2" {
				t.Errorf("GET in the transaction: %q, want 2", got)
			}
			if got := cmds[4].(*redis.MapStringStringCmd).Val(); got["f"] != "v" {
				t.Errorf("HGETALL in the transaction: %v", got)
			}
			// WATCH: a change by another connection aborts EXEC.
			err = rc.Watch(ctx, func(tx *redis.Tx) error {
				if err := other.Set(ctx, p+"a", "changed", 0).Err(); err != nil {
					return err
				}
				_, err := tx.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
					pipe.Set(ctx, p+"a", "mine", 0)
					return nil
				})
				return err
			}, p+"a")
			if !errors.Is(err, redis.TxFailedErr) {
				t.Errorf("EXEC after a watched key changed: %v, want %v", err, redis.TxFailedErr)
			}
			if got, _ := rc.Get(ctx, p+"a").Result(); got != "changed" {
				t.Errorf("the watched key: %q, want changed", got)
			}
			// An untouched watch lets EXEC run.
			err = rc.Watch(ctx, func(tx *redis.Tx) error {
				_, err := tx.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
					pipe.Set(ctx, p+"a", "mine", 0)
					return nil
				})
				return err
			}, p+"a")
			if err != nil {
				t.Errorf("EXEC with an unchanged watched key: %v", err)
			}
			for _, tc := range []struct {
				name string
				cmds [][]any
				want string // the last reply's error, or its value
			}{
				{"EXEC without MULTI", [][]any{{"exec"}}, "ERR EXEC without MULTI"},
				{"DISCARD without MULTI", [][]any{{"discard"}}, "ERR DISCARD without MULTI"},
				{"nested MULTI", [][]any{{"multi"}, {"multi"}, {"discard"}}, "OK"},
				{"an unknown command aborts", [][]any{{"multi"}, {"nosuch"}, {"exec"}}, "EXECABORT Transaction discarded because of previous errors."},
				{"a wrong arity aborts", [][]any{{"multi"}, {"get"}, {"exec"}}, "EXECABORT Transaction discarded because of previous errors."},
				{"DISCARD drops the queue", [][]any{{"multi"}, {"set", p + "d", "x"}, {"discard"}, {"exists", p + "d"}}, "0"},
				{"keys of two shards", [][]any{{"multi"}, {"set", "{a}1", "x"}, {"set", "{b}1", "x"}, {"set", "{c}1", "x"}, {"set", "{d}1", "x"}, {"exec"}},
					"CROSSSLOT Keys in request don't hash to the same slot"},
				{"WATCH inside MULTI", [][]any{{"multi"}, {"watch", p + "a"}, {"discard"}}, "OK"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					conn := rc.Conn()
					defer conn.Close()
					var last *redis.Cmd
					for _, c := range tc.cmds {
						last = conn.Do(ctx, c...)
					}
					got := fmt.Sprint(last.Val())
					if last.Err() != nil {
						got = last.Err().Error()
					}
					if got != tc.want {
						t.Errorf("reply %q, want %q", got, tc.want)
					}
				})
			}
		})
	}
}

// TestWritesOfSeveralKeysLeaveNoStaleCopy caches a key, then changes it
// with a transaction, a script, RENAME and a set command of several keys:
// no read afterwards returns the value cached before.
func TestWritesOfSeveralKeysLeaveNoStaleCopy(t *testing.T) {
	addr, _, _ := startGatewayOn(t, txCluster)
	rc := redisClient(t, addr, 2)
	ctx := t.Context()
	info := func(field string) int {
		t.Helper()
		s, err := rc.Info(ctx, "distcache").Result()
		if err != nil {
			t.Fatal(err)
		}
		return infoInt(s, field)
	}
	cache := func(key, value string) {
		t.Helper()
		if err := rc.Set(ctx, key, value, 0).Err(); err != nil {
			t.Fatal(err)
		}
		hits := info("cache_hits")
		poll.Eventually(t, "the key cached", func() (bool, error) {
			for range 20 {
				if err := rc.Get(ctx, key).Err(); err != nil {
					return false, err
				}
			}
			return info("cache_hits") > hits+10, nil
		})
	}
	readsGive := func(key, want string) {
		t.Helper()
		for i := range 50 {
			got, err := rc.Get(ctx, key).Result()
			if errors.Is(err, redis.Nil) {
				got, err = "(nil)", nil
			}
			if err != nil || got != want {
				t.Fatalf("read %d of %q: %q, %v; want %q", i, key, got, err, want)
			}
		}
	}
	cache("{k}hot", "old")
	if _, err := rc.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Set(ctx, "{k}hot", "multi", 0)
		pipe.Set(ctx, "{k}other", "x", 0)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	readsGive("{k}hot", "multi")

	cache("{k}hot", "old")
	script := "redis.call('SET', KEYS[1], ARGV[1]); return redis.call('GET', KEYS[1])"
	if got, err := rc.Eval(ctx, script, []string{"{k}hot"}, "eval").Result(); err != nil || got != "eval" {
		t.Fatalf("EVAL: %v, %v", got, err)
	}
	readsGive("{k}hot", "eval")

	cache("{k}hot", "old")
	if err := rc.Rename(ctx, "{k}hot", "{k}moved").Err(); err != nil {
		t.Fatal(err)
	}
	readsGive("{k}hot", "(nil)")
	readsGive("{k}moved", "old")

	cache("{k}dst", "old")
	rc.SAdd(ctx, "{k}s1", "a", "b")
	rc.SAdd(ctx, "{k}s2", "b", "c")
	if n, err := rc.SInterStore(ctx, "{k}dst", "{k}s1", "{k}s2").Result(); err != nil || n != 1 {
		t.Fatalf("SINTERSTORE: %v, %v", n, err)
	}
	if _, err := rc.Get(ctx, "{k}dst").Result(); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
		t.Fatalf("GET of a key SINTERSTORE made a set: %v; want WRONGTYPE", err)
	}
	if info("released_keys") == 0 {
		t.Error("no key was released from the caches")
	}
}

// TestScripts loads scripts and functions on every shard and runs them
// at the shard of their keys.
func TestScripts(t *testing.T) {
	addr, _, _ := startGatewayOn(t, txCluster)
	rc := redisClient(t, addr, 2)
	ctx := t.Context()
	sha, err := rc.ScriptLoad(ctx, "return redis.call('INCRBY', KEYS[1], ARGV[1])").Result()
	if err != nil {
		t.Fatal(err)
	}
	for i, key := range []string{"{a}n", "{b}n", "{c}n", "{d}n"} {
		if got, err := rc.EvalSha(ctx, sha, []string{key}, 5).Int(); err != nil || got != 5 {
			t.Fatalf("EVALSHA on key %d: %v, %v", i, got, err)
		}
	}
	if ex, err := rc.ScriptExists(ctx, sha, "0000000000000000000000000000000000000000").Result(); err != nil || !ex[0] || ex[1] {
		t.Fatalf("SCRIPT EXISTS: %v, %v", ex, err)
	}
	lib := "#!lua name=tlib\nredis.register_function('tget', function(keys, args) return redis.call('GET', keys[1]) end)"
	if err := rc.FunctionLoad(ctx, lib).Err(); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"{a}n", "{b}n", "{c}n"} {
		if got, err := rc.FCall(ctx, "tget", []string{key}).Text(); err != nil || got != "5" {
			t.Fatalf("FCALL on %q: %q, %v", key, got, err)
		}
	}
	if err := rc.Eval(ctx, "return 1", []string{"{a}x", "{b}x", "{c}x", "{d}x"}).Err(); err == nil || !strings.HasPrefix(err.Error(), "CROSSSLOT") {
		t.Errorf("EVAL on keys of several shards: %v; want CROSSSLOT", err)
	}
	// A script EVAL ran at one shard exists on every shard.
	body := "return 'once ' .. KEYS[1]"
	if err := rc.Eval(ctx, body, []string{"{a}e"}).Err(); err != nil {
		t.Fatal(err)
	}
	sum := sha1.Sum([]byte(body))
	if ex, err := rc.ScriptExists(ctx, hex.EncodeToString(sum[:])).Result(); err != nil || !ex[0] {
		t.Errorf("SCRIPT EXISTS after EVAL: %v, %v", ex, err)
	}
	for _, key := range []string{"{b}e", "{c}e", "{d}e"} {
		if got, err := rc.EvalSha(ctx, hex.EncodeToString(sum[:]), []string{key}).Text(); err != nil || got != "once "+key {
			t.Errorf("EVALSHA of an EVAL's script on %q: %q, %v", key, got, err)
		}
	}
	if err := rc.FunctionFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.FCall(ctx, "tget", []string{"{a}n"}).Err(); err == nil {
		t.Error("FCALL after FUNCTION FLUSH ran")
	}
}
