package client

import (
	"context"
	"net/netip"
	"sync"
	"time"

	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
)

// PutManyFunc writes keys[i] = values[i] as Put writes each, for a caller
// that runs an event loop (a gateway's pipeline of SETs): the first
// attempt of every write leaves with the others, in one bundle per shim
// when bundles are on, and done is called once every write has ended,
// errs[i] being what Put returns for keys[i]. The keys must differ: the
// writes run concurrently. When every write ends with its first attempt,
// done runs on the transport's reader goroutine that received the last
// reply, so it must not block; a write the shim asks to send anew (its
// coherence timed out, nothing written) goes on as Put's does, on a
// goroutine that then calls done. ctx bounds the writes and must stay live
// until done; values must not change until then.
func (c *Client) PutManyFunc(ctx context.Context, keys []string, values [][]byte, errs []error, done func()) {
	c.stats.puts.Add(uint64(len(keys)))
	if v := c.view.Load(); c.writesDirect(v) {
		c.putManyDirect(ctx, v, keys, values, errs, done)
		return
	}
	c.writeManyFunc(ctx, wire.OpPut, "put", keys, values, nil, errs, done)
}

// IncrByManyFunc adds deltas[i] to keys[i] as IncrBy does, each, and is
// PutManyFunc otherwise: results[i] is IncrBy's value, errs[i] its error.
// The keys must differ.
func (c *Client) IncrByManyFunc(ctx context.Context, keys []string, deltas []int64, results []int64, errs []error, done func()) {
	args := make([][]byte, len(keys))
	for i, d := range deltas {
		c.stats.rmws.Add(1)
		args[i] = wire.AppendRMW(nil, wire.RMWIncrBy, wire.IncrByArg(d))
	}
	replies := make([][]byte, len(keys))
	parse := func() {
		for i, r := range replies {
			if errs[i] != nil {
				continue
			}
			results[i], errs[i] = shimInt(wire.RMWIncrBy, keys[i], r)
		}
		done()
	}
	if v := c.view.Load(); c.writesDirect(v) {
		c.incrManyDirect(ctx, v, keys, deltas, args, replies, errs, parse)
		return
	}
	c.writeManyFunc(ctx, wire.OpRMW, wire.RMWIncrBy.String(), keys, args, replies, errs, parse)
}

// writeManyFunc runs the writes of op (verb in errors) of values[i] to
// keys[i], as write runs each, and keeps each reply's value in replies[i]
// (none when replies is nil).
func (c *Client) writeManyFunc(ctx context.Context, op wire.Op, verb string, keys []string, values, replies [][]byte, errs []error, done func()) {
	start := time.Now()
	v := c.view.Load()
	type attempt struct {
		i   int
		dst netip.AddrPort
		msg wire.Message
	}
	firsts := make([]attempt, 0, len(keys))
	kbs := keyBytes(keys)
	for i, key := range keys {
		if label, err := checkWrite(key, values[i]); err != nil {
			errs[i] = c.wrote(op, verb, key, start, label, err)
			continue
		}
		dst, err := c.shardAddr(ctx, v, key)
		if err != nil {
			errs[i] = c.wrote(op, verb, key, start, metrics.StatusResult(wire.StatusInternal), err)
			continue
		}
		firsts = append(firsts, attempt{i: i, dst: dst,
			msg: wire.Message{Header: wire.Header{Op: op, Flags: wire.FlagFirst, MapVersion: v.version}, Key: kbs[i], Value: values[i]}})
	}
	reqs := make([]transport.Request, len(firsts))
	for j := range firsts {
		reqs[j] = transport.Request{Dst: firsts[j].dst, Msg: &firsts[j].msg}
	}
	deadline, _ := ctx.Deadline() // none: as write's call, until ctx ends
	c.ep.CallManyFunc(deadline, reqs, func(out []transport.Reply) {
		var again []int
		for j := range firsts {
			a := &firsts[j]
			label, anew, err := c.writeAnswered(ctx, &a.msg, a.dst, out[j].Msg, out[j].Err, 1)
			if anew {
				again = append(again, a.i)
				continue
			}
			errs[a.i] = c.wrote(op, verb, keys[a.i], start, label, err)
			if err == nil && replies != nil {
				replies[a.i] = out[j].Msg.Value
			}
		}
		if len(again) == 0 {
			done()
			return
		}
		go func() {
			var wg sync.WaitGroup
			for _, i := range again {
				wg.Go(func() { // on from attempt 2, as doWrite's own loop goes on
					r, label, err := c.doWrite(ctx, op, keys[i], values[i], 2)
					errs[i] = c.wrote(op, verb, keys[i], start, label, err)
					if err == nil && replies != nil {
						replies[i] = r.Value
					}
				})
			}
			wg.Wait()
			done()
		}()
	})
}
