package gateway_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/dataplane/cachenode"
	"github.com/distcache/distcache/dataplane/shim"
	"github.com/distcache/distcache/hotkey"
	"github.com/distcache/distcache/internal/testing/clustertest"
	"github.com/distcache/distcache/workload/history"
)

// TestLinearizableTransactions records what go-redis clients saw through
// the gateway while hot string keys are read through the caches and
// written with SET, with EVAL and inside MULTI and EXEC (which Redis runs
// itself once the keys left the caches), and a counter is incremented
// with INCR, EVAL and MULTI, as a spine node crashes, is failed over and
// comes back. Each key is a register: linearizable, no acknowledged write
// lost, the counter holding its acknowledged increments plus at most the
// unanswered ones.
func TestLinearizableTransactions(t *testing.T) {
	addr, _, c := startGatewayOn(t, clustertest.Config{Name: "lintx", Racks: 2, ShardsPerRack: 1, Spine: 2,
		DirectReads: true, DirectWrites: true, HashTags: true,
		// A released key is cached again soon, so that transactions
		// meet cached copies often.
		Shim: func(s *shim.Config) { s.ReleaseHold = 10 * time.Millisecond },
		Node: func(n *cachenode.Config) {
			n.Interval = 20 * time.Millisecond
			n.Detector = hotkey.Config{Threshold: 3, SketchWidth: 1024, BloomBits: 4096}
		}})
	const clients, opsPerClient = 8, 500
	keys, counter := []string{"{x}s1", "{x}s2"}, "{x}n"
	var acked, unknown atomic.Int64
	ops := runWithSpineFault(t, addr, c, clients, opsPerClient,
		func(ctx context.Context, rc *redis.Client, rec *history.Recorder, rng *rand.Rand, id, n int) (history.Operation, bool) {
			op, ok := txOp(ctx, rc, rec, rng, id, n, keys, counter)
			if ok && op.Key == counter && op.Kind == history.Incr {
				if op.OutcomeUnknown() {
					unknown.Add(1)
				} else {
					acked.Add(1)
				}
			}
			return op, ok
		})
	rc := redisClient(t, addr, 2)
	finals := map[string]history.Observed{counter: observed(t, rc.Get(t.Context(), counter))}
	for _, k := range keys {
		finals[k] = observed(t, rc.Get(t.Context(), k))
	}
	res, final := checkHistory(t, ops, finals, counter, acked.Load(), unknown.Load())
	info, err := rc.Info(t.Context(), "distcache").Result()
	if err != nil {
		t.Fatal(err)
	}
	if infoInt(info, "released_keys") == 0 || infoInt(info, "cache_hits") == 0 {
		t.Fatalf("no transaction released a cached key, or no read hit a cache:\n%s", info)
	}
	if res.Operations < clients*opsPerClient/2 {
		t.Fatalf("only %d operations checked", res.Operations)
	}
	t.Logf("%d operations on %d keys linearizable (%d transactions and scripts, %d keys released from the caches, %d cache hits); counter %d: %d increments acknowledged, %d unanswered",
		res.Operations, res.Keys, infoInt(info, "atomic_operations"), infoInt(info, "released_keys"), infoInt(info, "cache_hits"),
		final, acked.Load(), unknown.Load())
}

// txOp is one operation of TestLinearizableTransactions: a GET of a key
// (half of them); its SET plain, by EVAL or inside MULTI; or an increment
// of the counter by INCR, EVAL or MULTI.
func txOp(ctx context.Context, rc *redis.Client, rec *history.Recorder, rng *rand.Rand, id, n int, keys []string, counter string) (history.Operation, bool) {
	op := history.Operation{Client: id, Key: keys[rng.IntN(len(keys))], Kind: history.Put}
	how := rng.IntN(3)
	switch p := rng.IntN(10); {
	case p < 5:
		op.Kind = history.Get
	case p < 7:
		op.Key, op.Kind, op.Delta = counter, history.Incr, 1
	}
	op.Call = rec.Now()
	var err error
	switch op.Kind {
	case history.Get:
		if !getInto(ctx, rc, &op) {
			return op, false
		}
	case history.Put:
		op.Value = strconv.Itoa((n + 1) * 1_000_000)
		switch how {
		case 0:
			err = rc.Set(ctx, op.Key, op.Value, 0).Err()
		case 1:
			err = rc.Eval(ctx, "return redis.call('SET', KEYS[1], ARGV[1])", []string{op.Key}, op.Value).Err()
		default:
			_, err = rc.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, op.Key, op.Value, 0)
				return nil
			})
		}
	default:
		var sum int64
		switch how {
		case 0:
			sum, err = rc.Incr(ctx, op.Key).Result()
		case 1:
			sum, err = rc.Eval(ctx, "return redis.call('INCR', KEYS[1])", []string{op.Key}).Int64()
		default:
			var incr *redis.IntCmd
			_, err = rc.TxPipelined(ctx, func(p redis.Pipeliner) error {
				incr = p.Incr(ctx, op.Key)
				return nil
			})
			sum = incr.Val()
		}
		op.Value, op.Found = strconv.FormatInt(sum, 10), true
	}
	op.Return = rec.Now()
	if err != nil {
		op.Return = history.Unknown
	}
	return op, true
}
