package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/dataplane/heldkeys"
	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/redisbatch"
	"github.com/distcache/distcache/dataplane/wire"
)

// Direct writes (spec.dataPlane.directWrites). Where the map lets it
// (partmap.Shard.DirectWrites), a client that reads storage itself sends a
// pipeline's plain SETs and INCRs to the keys' Redis first, each as a
// script of package heldkeys on the connection its direct reads share:
// Redis writes a key that no cache may hold and answers nil for one that a
// cache may hold, which the client then writes through the key's shim as
// before. A key no cache holds is thus written at a proxy's cost, one
// script in Redis, with no shim round trip; package heldkeys argues why no
// reader sees a value older than such a write.
//
// A write whose connection broke may or may not have run, and may still
// run: Redis may hold it in its input buffer. It is not sent again, to
// Redis (redisbatch.Call.Once) or to the shim, whose write it could
// follow and undo: it fails with ErrOutcomeUnknown, as a write without a
// reply does.

// writesDirect reports whether v lets the client write keys directly.
func (c *Client) writesDirect(v *view) bool { return v.directWrites && !c.cfg.Bypass }

// putManyDirect is PutManyFunc's writes where v lets them go to Redis:
// on a goroutine of its own, the keys a cache may hold then through their
// shims (writeManyFunc).
func (c *Client) putManyDirect(ctx context.Context, v *view, keys []string, values [][]byte, errs []error, done func()) {
	calls := make([]redisbatch.Call, len(keys))
	for i, key := range keys {
		calls[i] = redisbatch.Call{Script: heldkeys.Set, Keys: []string{key, heldkeys.Key}, Args: []any{values[i]}, Once: true}
	}
	go c.writeDirect(ctx, v, wire.OpPut, "put", keys, values, calls, errs, func(rest []int) {
		c.writeRest(ctx, wire.OpPut, "put", keys, values, nil, errs, rest, done)
	})
}

// incrManyDirect is IncrByManyFunc's increments where v lets them go to
// Redis, as putManyDirect; args are their shim requests' arguments.
func (c *Client) incrManyDirect(ctx context.Context, v *view, keys []string, deltas []int64, args, replies [][]byte, errs []error, done func()) {
	calls := make([]redisbatch.Call, len(keys))
	for i, key := range keys {
		calls[i] = redisbatch.Call{Script: heldkeys.IncrBy, Keys: []string{key, heldkeys.Key}, Args: []any{deltas[i]}, Once: true}
	}
	go c.writeDirect(ctx, v, wire.OpRMW, wire.RMWIncrBy.String(), keys, args, calls, errs, func(rest []int) {
		for i := range calls {
			if n, ok := calls[i].Result.(int64); ok && calls[i].Err == nil {
				replies[i] = strconv.AppendInt(nil, n, 10)
			}
		}
		c.writeRest(ctx, wire.OpRMW, wire.RMWIncrBy.String(), keys, args, replies, errs, rest, done)
	})
}

// writeDirect runs calls[i] for keys[i] at their shards' Redis, one
// pipeline per shard, the shards at once, settles errs[i] of every write
// Redis answered, and calls rest with the others: the keys a cache may
// hold.
func (c *Client) writeDirect(ctx context.Context, v *view, op wire.Op, verb string, keys []string, values [][]byte, calls []redisbatch.Call, errs []error, rest func([]int)) {
	start := time.Now()
	byShard := map[int][]*redisbatch.Call{}
	var sent, shimmed []int
	for i, key := range keys {
		if label, err := checkWrite(key, values[i]); err != nil {
			errs[i] = c.wrote(op, verb, key, start, label, err)
			continue
		}
		sh := v.p.ShardIndex(key)
		byShard[sh] = append(byShard[sh], &calls[i])
		sent = append(sent, i)
	}
	var wg sync.WaitGroup
	for sh, group := range byShard {
		wg.Go(func() { v.storage[sh].EvalMany(ctx, group) })
	}
	wg.Wait()
	for _, i := range sent {
		err := calls[i].Err
		out := directApplied
		switch {
		case errors.Is(err, redis.Nil):
			out = directHeld
		case isRedisError(err):
			out = directRefused
		case err != nil:
			out = directBroken
		}
		var shim bool
		if shim, errs[i] = c.settleDirect(op, verb, keys[i], start, out, err); shim {
			shimmed = append(shimmed, i)
		}
	}
	rest(shimmed)
}

// directOutcome is what Redis made of a direct write.
type directOutcome int

const (
	directApplied directOutcome = iota
	directHeld                  // a cache may hold the key: the shim writes it
	directRefused               // Redis's error reply (err)
	directBroken                // the connection failed (err): it may have run
)

// settleDirect accounts for a direct write of key that ended with out
// (and err) and returns its error, or shim true when the key's shim must
// write it instead: a key a cache may hold.
func (c *Client) settleDirect(op wire.Op, verb, key string, start time.Time, out directOutcome, err error) (shim bool, _ error) {
	switch {
	case out == directApplied:
		c.stats.storageWrites.Add(1)
		return false, c.wrote(op, verb, key, start, metrics.ResultOK, nil)
	case out == directHeld:
		c.stats.heldWrites.Add(1)
		return true, nil
	case out == directRefused:
		label, werr := metrics.StatusResult(wire.StatusInternal), fmt.Errorf("%w: redis: %w", ErrInternal, err)
		switch {
		case strings.Contains(err.Error(), "not an integer"):
			label, werr = metrics.StatusResult(wire.StatusInvalid), fmt.Errorf("%w: redis: %w", ErrNotInteger, err)
		case strings.HasPrefix(err.Error(), "WRONGTYPE"):
			label, werr = metrics.StatusResult(wire.StatusWrongType), fmt.Errorf("%w: redis: %w", ErrWrongType, err)
		}
		return false, c.wrote(op, verb, key, start, label, werr)
	}
	c.stats.storageFailures.Add(1)
	return false, c.wrote(op, verb, key, start, metrics.ResultTimeout, fmt.Errorf("%w: redis: %w", ErrOutcomeUnknown, err))
}

// wait runs start and waits for it to call done.
func wait(start func(done func())) {
	ch := make(chan struct{})
	start(func() { close(ch) })
	<-ch
}

// isRedisError says whether err is Redis's error reply.
func isRedisError(err error) bool {
	var reply redis.Error
	return errors.As(err, &reply)
}

// writeRest writes keys[i] for each i of rest through their shims
// (writeManyFunc) and then calls done.
func (c *Client) writeRest(ctx context.Context, op wire.Op, verb string, keys []string, values, replies [][]byte, errs []error, rest []int, done func()) {
	if len(rest) == 0 {
		done()
		return
	}
	sk, sv, se := make([]string, len(rest)), make([][]byte, len(rest)), make([]error, len(rest))
	var sr [][]byte
	if replies != nil {
		sr = make([][]byte, len(rest))
	}
	for j, i := range rest {
		sk[j], sv[j] = keys[i], values[i]
	}
	c.writeManyFunc(ctx, op, verb, sk, sv, sr, se, func() {
		for j, i := range rest {
			errs[i] = se[j]
			if sr != nil {
				replies[i] = sr[j]
			}
		}
		done()
	})
}
