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
		c.stats.puts.Add(1)
		if label, err := checkWrite(key, values[i]); err != nil {
			errs[i] = c.wrote(wire.OpPut, "put", key, start, label, err)
			continue
		}
		dst, err := c.shardAddr(ctx, v, key)
		if err != nil {
			errs[i] = c.wrote(wire.OpPut, "put", key, start, metrics.StatusResult(wire.StatusInternal), err)
			continue
		}
		firsts = append(firsts, attempt{i: i, dst: dst,
			msg: wire.Message{Header: wire.Header{Op: wire.OpPut, MapVersion: v.version}, Key: kbs[i], Value: values[i]}})
	}
	reqs := make([]transport.Request, len(firsts))
	for j := range firsts {
		reqs[j] = transport.Request{Dst: firsts[j].dst, Msg: &firsts[j].msg}
	}
	deadline, _ := ctx.Deadline() // none: as Put's call, until ctx ends
	c.ep.CallManyFunc(deadline, reqs, func(out []transport.Reply) {
		var again []int
		for j := range firsts {
			a := &firsts[j]
			label, anew, err := c.writeAnswered(ctx, &a.msg, a.dst, out[j].Msg, out[j].Err, 1)
			if anew {
				again = append(again, a.i)
				continue
			}
			errs[a.i] = c.wrote(wire.OpPut, "put", keys[a.i], start, label, err)
		}
		if len(again) == 0 {
			done()
			return
		}
		go func() {
			var wg sync.WaitGroup
			for _, i := range again {
				wg.Go(func() { _, errs[i] = c.write(ctx, wire.OpPut, "put", keys[i], values[i]) })
			}
			wg.Wait()
			done()
		}()
	})
}
