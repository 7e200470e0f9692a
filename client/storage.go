package client

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/redisbatch"
	"github.com/distcache/distcache/dataplane/redisconn"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/placement/partmap"
)

// Direct reads of storage (spec.dataPlane.directReads). When the map names
// every shard's Redis (partmap.Shard.Redis), a read asks its cache node
// with wire.FlagDirect: the node answers a hit as always, and a miss at once
// with "read it yourself" instead of reading the shim for it. The client
// then reads the key from the shard's Redis on a pipelined connection that
// every client of the process shares (package redisbatch), as a proxy
// would: a miss costs the storage
// server one Redis GET, not a shim's round trip as well. The read stays
// linearizable: Redis's value is current when Redis reads it, which is
// within the read's interval, and every write reaches Redis only after its
// invalidation of the cached copies. Writes and the nodes' fills still go
// through the shims. A read whose Redis cannot be reached asks the shim.

// storageReaders are a client's handles on the process's Redis readers,
// one per Redis address (the address's batcher is shared by every client
// of the process, as a proxy shares one connection per server among its
// clients: the reads of all of them are pipelined together). Close
// releases them.
type storageReaders struct {
	mu     sync.Mutex // guards byAddr and closed
	byAddr map[string]*storageReader
	closed bool
}

// storageReader is one Redis address's client and batcher, shared by the
// clients that hold it (refs, guarded by sharedReadersMu).
type storageReader struct {
	addr string
	rdb  *redis.Client
	b    *redisbatch.Batcher
	refs int
}

var (
	sharedReadersMu sync.Mutex // guards sharedReaders and their refs
	sharedReaders   = map[string]*storageReader{}
)

// acquireReader returns the process's reader of addr, created with cfg's
// timeouts when no client holds one.
func acquireReader(addr string, cfg Config) *storageReader {
	sharedReadersMu.Lock()
	defer sharedReadersMu.Unlock()
	sr := sharedReaders[addr]
	if sr == nil {
		rdb := redis.NewClient(storageOptions(addr, cfg))
		sr = &storageReader{addr: addr, rdb: rdb, b: redisbatch.New(rdb)}
		sharedReaders[addr] = sr
	}
	sr.refs++
	return sr
}

// release drops a client's hold on sr, closing it with the last.
func (sr *storageReader) release() error {
	sharedReadersMu.Lock()
	defer sharedReadersMu.Unlock()
	if sr.refs--; sr.refs > 0 {
		return nil
	}
	delete(sharedReaders, sr.addr)
	return errors.Join(sr.b.Close(), sr.rdb.Close())
}

// forMap returns a batcher per shard of m by global shard index
// (partmap.Placement.ShardIndex), or nil unless every shard names its
// Redis: then reads go through the nodes and shims as before.
func (s *storageReaders) forMap(m *partmap.Map, cfg Config) []*redisbatch.Batcher {
	var addrs []string // by global shard index
	for _, r := range m.Storage.Racks {
		for _, sh := range r.Shards {
			if sh.Redis == "" {
				return nil
			}
			addrs = append(addrs, sh.Redis)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	if s.byAddr == nil {
		s.byAddr = map[string]*storageReader{}
	}
	out := make([]*redisbatch.Batcher, len(addrs))
	for i, addr := range addrs {
		sr := s.byAddr[addr]
		if sr == nil {
			sr = acquireReader(addr, cfg)
			s.byAddr[addr] = sr
		}
		out[i] = sr.b
	}
	return out
}

// storageOptions are the go-redis options of a direct read's connection:
// RESP2 over raw system calls (as the shims read Redis, redisconn.Dial)
// or TLS, logged in as Config.StorageLogin says,
// no retries (a failed read asks the shim instead), each wait bounded by
// an attempt's timeout.
func storageOptions(addr string, cfg Config) *redis.Options {
	return &redis.Options{
		Addr: addr, Protocol: 2, Dialer: cfg.StorageLogin.Dialer(),
		DialTimeout: cfg.AttemptTimeout, ReadTimeout: cfg.AttemptTimeout, WriteTimeout: cfg.AttemptTimeout,
		MaxRetries: -1, DialerRetries: 1, PoolSize: 2, DisableIdentity: true,
	}
}

// close releases every reader the client holds.
func (s *storageReaders) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	var errs []error
	for _, sr := range s.byAddr {
		errs = append(errs, sr.release())
	}
	clear(s.byAddr)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cannot close the storage readers: %w", err)
	}
	return nil
}

// readStorage reads key from its shard's Redis, after a node said it has no
// copy (stepStorage). When Redis cannot be reached it asks the key's shim.
func (c *Client) readStorage(ctx context.Context, v *view, key string, kb []byte) (Result, string, step, error) {
	b := v.storage[v.p.ShardIndex(key)]
	value, err := b.Get(ctx, key)
	return c.storageAnswered(ctx, v, key, kb, value, err)
}

// readStorageOrShim reads key from storage when no cache node is left to
// ask: from its shard's Redis where the client reads storage itself, else
// (or when Redis cannot be reached) through its shim.
func (c *Client) readStorageOrShim(ctx context.Context, v *view, key string, kb []byte) (Result, string, step, error) {
	if v.storage == nil {
		return c.getDirect(ctx, v, key, kb)
	}
	return c.readStorage(ctx, v, key, kb)
}

// storageResult counts a direct read that Redis answered, with value or
// (found false) that the key does not exist, and returns its outcome.
func (c *Client) storageResult(value []byte, found bool) (Result, string, error) {
	c.stats.storageReads.Add(1)
	if !found {
		return Result{}, metrics.StatusResult(wire.StatusNotFound), ErrNotFound
	}
	c.stats.misses.Add(1)
	return Result{Value: value, Layer: -1}, metrics.ResultMiss, nil
}

// storageAnswered is the outcome of a direct read of key from Redis: value,
// or err; on a failure other than Redis's "nil" the read asks the shim.
func (c *Client) storageAnswered(ctx context.Context, v *view, key string, kb []byte, value []byte, err error) (Result, string, step, error) {
	if err == nil || errors.Is(err, redis.Nil) {
		r, label, err := c.storageResult(value, err == nil)
		return r, label, stepDone, err
	}
	if redisconn.IsWrongType(err) { // an answer: the key holds a hash, a list...
		c.stats.storageReads.Add(1)
		return Result{}, metrics.StatusResult(wire.StatusWrongType), stepDone, fmt.Errorf("%w: %w", ErrWrongType, err)
	}
	c.stats.storageFailures.Add(1)
	c.cfg.Logger.Debug("cannot read storage directly; asking the shim", "key", key, "err", err)
	return c.getDirect(ctx, v, key, kb)
}
