package gateway_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/dataplane/cachenode"
	"github.com/distcache/distcache/hotkey"
	"github.com/distcache/distcache/internal/testing/clustertest"
	"github.com/distcache/distcache/workload/history"
)

// TestLinearizableHashFields records what go-redis clients saw through the
// gateway — HGET, HSET, HDEL and HINCRBY on the fields of two hashes, and
// HINCRBY and HGET on a counter field — while a spine node crashes, is
// failed over and comes back, and checks the history as
// TestLinearizableThroughTheGateway does, each field a register:
// linearizable, no acknowledged write lost, the counter holding exactly
// its acknowledged increments plus at most the unanswered ones. Hot
// string keys are read and written beside them, so the caches work while
// the hashes change. It runs through the shims, and with direct reads and
// writes (the gateway runs the hash commands at Redis itself).
func TestLinearizableHashFields(t *testing.T) {
	for _, direct := range []bool{false, true} {
		t.Run(map[bool]string{false: "through the shims", true: "direct reads and writes"}[direct], func(t *testing.T) {
			linearizableHashFields(t, direct)
		})
	}
}

func linearizableHashFields(t *testing.T, direct bool) {
	addr, _, c := startGatewayOn(t, clustertest.Config{Name: "linh", Racks: 2, ShardsPerRack: 1, Spine: 2,
		DirectReads: direct, DirectWrites: direct,
		Node: func(n *cachenode.Config) {
			n.Interval = 20 * time.Millisecond
			n.Detector = hotkey.Config{Threshold: 3, SketchWidth: 1024, BloomBits: 4096}
		}})
	const clients, opsPerClient = 8, 300
	hashes, fields, counter := []string{"linh:a", "linh:b"}, []string{"f0", "f1", "f2"}, "linh:n"
	strs := []string{"linh:s1", "linh:s2"}
	var acked, unknown atomic.Int64 // the counter's increments
	ops := runWithSpineFault(t, addr, c, clients, opsPerClient,
		func(ctx context.Context, rc *redis.Client, rec *history.Recorder, rng *rand.Rand, id, n int) (history.Operation, bool) {
			if rng.IntN(4) == 0 { // a hot string key, through the caches
				return linearizableOp(ctx, t, rc, rec, rng, id, n, strs, strs[0])
			}
			h, f := hashes[rng.IntN(len(hashes))], fields[rng.IntN(len(fields))]
			op, ok := hashOp(ctx, rc, rec, rng, id, n, h, f, counter)
			if ok && op.Key == counter+"/n" && op.Kind == history.Incr {
				if op.OutcomeUnknown() {
					unknown.Add(1)
				} else {
					acked.Add(1)
				}
			}
			return op, ok
		})
	rc := redisClient(t, addr, 2)
	finals := map[string]history.Observed{}
	for _, h := range append(hashes, counter) {
		for _, f := range append(fields, "n") {
			finals[h+"/"+f] = observed(t, rc.HGet(t.Context(), h, f))
		}
	}
	for _, k := range strs {
		finals[k] = observed(t, rc.Get(t.Context(), k))
	}
	res, final := checkHistory(t, ops, finals, counter+"/n", acked.Load(), unknown.Load())
	// With direct writes, the hash commands ran at Redis, not at the shims.
	info, err := rc.Info(t.Context(), "distcache").Result()
	if err != nil {
		t.Fatal(err)
	}
	hashWrites := 0
	for _, op := range ops {
		if strings.Contains(op.Key, "/") && op.Kind != history.Get && !op.OutcomeUnknown() {
			hashWrites++
		}
	}
	if n := infoInt(info, "storage_writes"); (n >= hashWrites) != direct {
		t.Errorf("%d writes at Redis directly for %d hash writes (direct reads and writes: %v)", n, hashWrites, direct)
	}
	if res.Operations < clients*opsPerClient/2 || acked.Load() == 0 {
		t.Fatalf("only %d operations checked, %d acknowledged increments", res.Operations, acked.Load())
	}
	t.Logf("%d operations on %d registers (hash fields and strings) linearizable; a spine node crashed and came back; counter %d: %d increments acknowledged, %d unanswered",
		res.Operations, res.Keys, final, acked.Load(), unknown.Load())
}

// hashOp is one operation of TestLinearizableHashFields on field f of hash
// h (history key "h/f"): HGET, HSET of a decimal integer unique to the
// operation, HDEL or HINCRBY; or, one time in four, HINCRBY 1 or HGET of
// the counter's field n.
func hashOp(ctx context.Context, rc *redis.Client, rec *history.Recorder, rng *rand.Rand, id, n int, h, f, counter string) (history.Operation, bool) {
	op := history.Operation{Client: id, Key: h + "/" + f}
	if rng.IntN(4) == 0 {
		h, f, op.Key, op.Kind, op.Delta = counter, "n", counter+"/n", history.Incr, 1
		if rng.IntN(4) == 0 {
			op.Kind = history.Get
		}
	} else {
		switch p := rng.IntN(20); {
		case p < 9:
			op.Kind = history.Get
		case p < 15:
			op.Kind = history.Put
		case p < 16:
			op.Kind = history.Delete
		default:
			op.Kind, op.Delta = history.Incr, int64(1+9*rng.IntN(2))
		}
	}
	op.Call = rec.Now()
	var err error
	switch op.Kind {
	case history.Get:
		v, gerr := rc.HGet(ctx, h, f).Result()
		if gerr != nil && !errors.Is(gerr, redis.Nil) {
			return op, false
		}
		op.Value, op.Found = v, gerr == nil
	case history.Put:
		op.Value = strconv.Itoa((n + 1) * 1_000_000)
		err = rc.HSet(ctx, h, f, op.Value).Err()
	case history.Delete:
		err = rc.HDel(ctx, h, f).Err()
	default:
		var sum int64
		if sum, err = rc.HIncrBy(ctx, h, f, op.Delta).Result(); err == nil {
			op.Value, op.Found = strconv.FormatInt(sum, 10), true
		}
	}
	op.Return = rec.Now()
	if err != nil {
		op.Return = history.Unknown
	}
	return op, true
}
