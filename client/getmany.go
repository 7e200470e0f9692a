package client

import (
	"context"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/placement/partmap"
)

// firstAttempt is the first request of one read of GetMany.
type firstAttempt struct {
	key    int               // index in GetMany's keys
	cd     partmap.Candidate // the cache candidate asked, unless direct
	direct bool              // the storage shim asked
	leaf   bool              // sent through the client leaf (clientleaf.go)
	addr   netip.AddrPort    // where
	sent   int64             // when, for the load table
	msg    wire.Message
}

// GetMany reads keys as GetResult reads each, for a caller with many reads
// at once (a gateway's pipeline): the first attempt of every read — to the
// least loaded candidate, or the shim — leaves with the others and the
// caller waits once for their replies, instead of a round trip and two
// goroutine hand-offs per read. The first attempts are not hedged: a read
// waits up to AttemptTimeout for the node it asked. A read its first
// attempt does not settle (a timeout, a refusal, a map change) goes on as
// GetResult's does, hedged, beside the others. res[i] and errs[i] are what
// GetResult returns for keys[i]; both must be as long as keys.
func (c *Client) GetMany(ctx context.Context, keys []string, res []Result, errs []error) {
	done := make(chan struct{})
	c.GetManyFunc(ctx, keys, res, errs, func() { close(done) })
	<-done
}

// GetManyFunc is GetMany that does not wait, for a caller that runs an
// event loop: it sends the first attempts and returns, and calls done once
// every read has settled res and errs. When every read settles with its
// first attempt (a hit, a value or an absence), done runs on the
// transport's reader goroutine that received the last reply, inside its
// receive pass (transport.Endpoint.CallManyFunc), so it must not block;
// otherwise on a goroutine that carried on the others. ctx bounds the
// reads that go on and must stay live until done.
func (c *Client) GetManyFunc(ctx context.Context, keys []string, res []Result, errs []error, done func()) {
	c.getManyFunc(ctx, keys, res, errs, done, func(v *view, cold []int, kbs [][]byte, start time.Time, done func()) {
		go func() {
			c.readStorageMany(ctx, v, keys, kbs, cold, start, res, errs)
			done()
		}()
	}, nil)
}

// coldReader reads keys[i] for every i of cold from Redis (warm.go),
// settles res[i] and errs[i], and then calls done.
type coldReader func(v *view, cold []int, kbs [][]byte, start time.Time, done func())

// getManyFunc is GetManyFunc with the keys that are not warm read by
// readCold, and those a node left to the client read by readMissed, which
// may be called on any goroutine (nil: on a goroutine of their own, as
// the reads carried on).
func (c *Client) getManyFunc(ctx context.Context, keys []string, res []Result, errs []error, done func(), readCold, readMissed coldReader) {
	start := time.Now()
	v := c.view.Load()
	firsts := make([]firstAttempt, 0, len(keys))
	kbs := keyBytes(keys)
	var cold []int // keys read from Redis straight away (warm.go)
	now := c.now()
	for i, key := range keys {
		c.stats.gets.Add(1)
		if checkKey(key) == nil && c.cold(v, key, now) {
			cold = append(cold, i)
			continue
		}
		a, label, err := c.firstOf(ctx, v, i, key, kbs[i], now)
		if err != nil {
			res[i], errs[i] = c.settle(key, time.Since(start), Result{}, label, err)
			continue
		}
		firsts = append(firsts, a)
	}
	reqs := make([]transport.Request, len(firsts))
	for j := range firsts {
		reqs[j] = transport.Request{Dst: firsts[j].addr, Msg: &firsts[j].msg}
	}
	if len(cold) > 0 { // the cold keys' reads and the others' settle apart
		done = halves(done)
		readCold(v, cold, kbs, start, done)
	}
	deadline := time.Now().Add(c.cfg.AttemptTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	c.ep.CallManyFunc(deadline, reqs, func(out []transport.Reply) {
		b := &manyReads{c: c, ctx: ctx, v: v, keys: keys, kbs: kbs, start: start, res: res, errs: errs, readMissed: readMissed}
		b.firstsAnswered(firsts, out, done)
	})
}

// manyReads is one GetManyFunc after its first attempts.
type manyReads struct {
	c         *Client
	ctx       context.Context
	v         *view
	keys      []string
	kbs       [][]byte
	start     time.Time
	res       []Result
	errs      []error
	storage   []int     // keys no node held, read from Redis (storage.go)
	carriedOn []carried // keys read on as GetResult reads them
	// readMissed reads storage, when set (getManyFunc).
	readMissed coldReader
}

// carried is a read of GetMany that its first attempt did not settle:
// keys[key], read on as GetResult reads it, but not through the client
// leaf again when its first attempt went through it (pastLeaf).
type carried struct {
	key      int
	pastLeaf bool
}

// firstsAnswered settles the reads their first attempts answered and
// carries the others on, then calls done.
func (b *manyReads) firstsAnswered(firsts []firstAttempt, out []transport.Reply, done func()) {
	c := b.c
	now, took := c.now(), time.Since(b.start) // for all the batch's replies
	for j := range firsts {
		a := &firsts[j]
		var (
			r     Result
			label string
			s     step
			err   error
		)
		switch {
		case a.leaf:
			var buf [maxInline]partmap.Candidate
			cands := b.v.p.Candidates(b.keys[a.key], buf[:0])
			r, label, s, err = c.leafAnswered(b.ctx, b.v, cands, a.addr, out[j].Msg, out[j].Err, now)
		case a.direct:
			r, label, s, err = c.directAnswered(b.ctx, b.v, a.addr, out[j].Msg, out[j].Err)
		default:
			r, label, s, err = c.nodeAnswered(b.ctx, b.v, a.cd, a.sent, out[j].Msg, out[j].Err, false, now)
		}
		switch s {
		case stepDone:
			b.res[a.key], b.errs[a.key] = c.settle(b.keys[a.key], took, r, label, err)
		case stepStorage:
			b.storage = append(b.storage, a.key)
		default:
			c.stats.retries.Add(1)
			b.carriedOn = append(b.carriedOn, carried{key: a.key, pastLeaf: a.leaf})
		}
	}
	if len(b.storage) == 0 && len(b.carriedOn) == 0 {
		done()
		return
	}
	if b.readMissed != nil && len(b.storage) > 0 {
		storage := b.storage
		b.storage = nil
		if len(b.carriedOn) == 0 {
			b.readMissed(b.v, storage, b.kbs, b.start, done)
			return
		}
		done = halves(done)
		b.readMissed(b.v, storage, b.kbs, b.start, done)
	}
	go func() {
		b.carryOn()
		done()
	}()
}

// carryOn reads the keys their first attempts did not settle: from
// storage, or again as GetResult does.
func (b *manyReads) carryOn() {
	var wg sync.WaitGroup
	for _, cr := range b.carriedOn {
		wg.Go(func() {
			i := cr.key
			r, label, err := b.c.read(b.ctx, b.keys[i], !cr.pastLeaf)
			b.res[i], b.errs[i] = b.c.settle(b.keys[i], time.Since(b.start), r, label, err)
		})
	}
	b.c.readStorageMany(b.ctx, b.v, b.keys, b.kbs, b.storage, b.start, b.res, b.errs)
	wg.Wait()
}

// readStorageMany reads keys[i] for every i of idx from their shards'
// Redis (storage.go): one pipeline per shard, the shards at once, and
// settles their results as GetMany's.
func (c *Client) readStorageMany(ctx context.Context, v *view, keys []string, kbs [][]byte, idx []int, start time.Time, res []Result, errs []error) {
	if len(idx) == 0 {
		return
	}
	byShard := map[int][]int{}
	for _, i := range idx {
		sh := v.p.ShardIndex(keys[i])
		byShard[sh] = append(byShard[sh], i)
	}
	read := func(sh int, group []int) {
		names := make([]string, len(group))
		for j, i := range group {
			names[j] = keys[i]
		}
		for j, rd := range v.storage[sh].GetMany(ctx, names) {
			i := group[j]
			r, label, s, err := c.storageAnswered(ctx, v, keys[i], kbs[i], rd.Value, rd.Err)
			if s != stepDone { // neither Redis nor the shim answered: on as GetResult
				r, label, err = c.get(ctx, keys[i])
			}
			res[i], errs[i] = c.settle(keys[i], time.Since(start), r, label, err)
		}
	}
	var wg sync.WaitGroup
	own, ownGroup := -1, []int(nil) // one shard is read on this goroutine
	for sh, group := range byShard {
		if own < 0 {
			own, ownGroup = sh, group
			continue
		}
		wg.Go(func() { read(sh, group) })
	}
	read(own, ownGroup)
	wg.Wait()
}

// firstOf is the first attempt of key's read (keys[i]): through the client
// leaf when the key may go through it (clientleaf.go), else at its least
// loaded cache candidate, or its storage shim when none is left (or with
// Config.Bypass). A key that cannot be read fails at once.
func (c *Client) firstOf(ctx context.Context, v *view, i int, key string, kb []byte, now int64) (firstAttempt, string, error) {
	if err := checkKey(key); err != nil {
		return firstAttempt{}, metrics.StatusResult(wire.StatusTooLarge), err
	}
	if !c.cfg.Bypass {
		var buf [maxInline]partmap.Candidate
		cands := v.p.Candidates(key, buf[:0])
		if addr, ok := c.leafFor(v, key, cands, now); ok {
			return firstAttempt{key: i, leaf: true, addr: addr, msg: c.leafRequest(v, kb)}, "", nil
		}
		if j := c.choose(v, cands, 0, now); j >= 0 {
			addr, m, sent := c.nodeRequest(v, cands[j], kb, 0, now)
			return firstAttempt{key: i, cd: cands[j], addr: addr, sent: sent, msg: m}, "", nil
		}
	}
	addr, m, err := c.directRequest(ctx, v, key, kb)
	if err != nil {
		return firstAttempt{}, metrics.StatusResult(wire.StatusInternal), err
	}
	return firstAttempt{key: i, direct: true, addr: addr, msg: m}, "", nil
}

// halves returns a function for the two parts of a work that each call it
// once when done: the second call calls whole.
func halves(whole func()) func() {
	var left atomic.Int32
	left.Store(2)
	return func() {
		if left.Add(-1) == 0 {
			whole()
		}
	}
}

// keyBytes copies keys into one allocation, for their requests.
func keyBytes(keys []string) [][]byte {
	size := 0
	for _, k := range keys {
		size += len(k)
	}
	all, out := make([]byte, 0, size), make([][]byte, len(keys))
	for i, k := range keys {
		all = append(all, k...)
		out[i] = all[len(all)-len(k) : len(all) : len(all)]
	}
	return out
}
