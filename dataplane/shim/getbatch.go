package shim

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// getBatcher reads keys from Redis for concurrent GETs in as few round
// trips as it can (flat combining, as the transport's sends): a read that
// finds another read's round trip under way queues its key, and the
// goroutine whose round trip ends sends everything queued meanwhile as one
// pipeline, again until nothing is queued. Under load the GETs of many
// distinct keys cost one write and one read on a Redis connection instead
// of one of each per key; a read alone is one GET at once, as without it.
// There is no timer and no goroutine of its own. Reads of one key were
// already coalesced before (serveGets); cache fills and writes do not pass
// here.
type getBatcher struct {
	rdb *redis.Client

	mu    sync.Mutex    // guards queue, spare and busy
	queue []*pendingGet // reads waiting for the next round trip
	spare []*pendingGet // the other queue's array, for reuse
	busy  bool          // a goroutine is running round trips
}

// pendingGet is one queued read and, once done is closed, its result.
// The reads of one getMany share done, closed by the last of them (last):
// they are queued together, so they are read in one round trip.
type pendingGet struct {
	key  string
	v    []byte
	err  error
	done chan struct{}
	last bool
}

// complete records a read's result and, for the last read of its
// getMany, signals them all done.
func (p *pendingGet) complete(v []byte, err error) {
	p.v, p.err = v, err
	if p.last {
		close(p.done)
	}
}

// get reads key.
func (b *getBatcher) get(ctx context.Context, key string) ([]byte, error) {
	p := b.getMany(ctx, []string{key})[0]
	return p.v, p.err
}

// getMany reads keys, in the round trip of the reads queued with them,
// and returns a completed read per key.
func (b *getBatcher) getMany(ctx context.Context, keys []string) []*pendingGet {
	if len(keys) == 0 {
		return nil
	}
	ps, reads := make([]*pendingGet, len(keys)), make([]pendingGet, len(keys))
	done := make(chan struct{})
	for i, key := range keys {
		reads[i] = pendingGet{key: key, done: done}
		ps[i] = &reads[i]
	}
	reads[len(reads)-1].last = true
	b.mu.Lock()
	b.queue = append(b.queue, ps...)
	if b.busy {
		b.mu.Unlock()
		<-done
		return ps
	}
	b.busy = true
	for {
		batch := b.queue
		b.queue, b.spare = b.spare[:0], nil
		b.mu.Unlock()
		b.read(ctx, batch)
		clear(batch)
		b.mu.Lock()
		b.spare = batch[:0]
		if len(b.queue) == 0 { // ps were in the first batch
			b.busy = false
			b.mu.Unlock()
			return ps
		}
	}
}

// read runs one round trip for batch and completes each read.
func (b *getBatcher) read(ctx context.Context, batch []*pendingGet) {
	if len(batch) == 1 {
		p := batch[0]
		p.complete(b.rdb.Get(ctx, p.key).Bytes())
		return
	}
	pipe := b.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(batch))
	for i, p := range batch {
		cmds[i] = pipe.Get(ctx, p.key)
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	for i, p := range batch {
		p.complete(cmds[i].Bytes())
	}
}
