package shim

import (
	"errors"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/dataplane/heldkeys"
	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/redisconn"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
)

// redisGet reads key: StatusOK and the value, StatusNotFound, or
// StatusUnavailable when Redis fails.
func (s *Shim) redisGet(key string) (wire.Status, []byte) {
	v, err := s.redisq.Get(s.ctx, key)
	return s.getStatus(key, v, err)
}

// getStatus is the status of a Redis GET of key that returned v, err.
func (s *Shim) getStatus(key string, v []byte, err error) (wire.Status, []byte) {
	switch {
	case errors.Is(err, redis.Nil):
		return wire.StatusNotFound, nil
	case redisconn.IsWrongType(err):
		return wire.StatusWrongType, nil
	case err != nil:
		s.redisError("GET", key, err)
		return wire.StatusUnavailable, nil
	}
	return wire.StatusOK, v
}

// redisGetCacheable reads key for a cache fill: as redisGet, but
// StatusUncacheable for a key with an expiry, which no cache may hold (a
// copy could outlive it; reads of the key go to Redis, which expires it),
// and for a key of another type than a string.
func (s *Shim) redisGetCacheable(key string) (wire.Status, []byte) {
	pipe := s.rdb.Pipeline()
	pipe.SAdd(s.ctx, heldkeys.Key, key) // before the read: direct writes of the key stop (package heldkeys)
	get, ttl := pipe.Get(s.ctx, key), pipe.PTTL(s.ctx, key)
	if _, err := pipe.Exec(s.ctx); err != nil && !errors.Is(err, redis.Nil) && !redisconn.IsWrongType(err) {
		s.redisError("GET", key, err)
		return wire.StatusUnavailable, nil
	}
	v, err := get.Bytes()
	status, v := s.getStatus(key, v, err)
	if status == wire.StatusWrongType || status == wire.StatusOK && ttl.Val() >= 0 { // -1: no expiry (-2: no key)
		s.stats.uncacheable.Add(1)
		return wire.StatusUncacheable, nil
	}
	return status, v
}

// serveGets answers GETs of one key, each a cache node's miss or a
// client's direct read, with one Redis read that started after all of them
// arrived (queuedReads). A node's is marked FlagTracked when no write of
// the key is in progress and the node is the key's Active owner, checked
// before Redis is read: every write that has not started yet then
// invalidates the node before it completes (or after the node has left the
// key's ownership for the serving lease), so the readers the node
// coalesced onto this read may take its value (wire.FlagTracked).
func (s *Shim) serveGets(reads []*request) {
	tracked := s.tracking(reads)
	status, value := s.redisGet(reads[0].key)
	s.answerReads(reads, s.getReplies(nil, reads, tracked, status, value))
}

// markHeld adds key to the keys a cache may hold (package heldkeys) and
// waits for Redis to have done it, so that the read that follows cannot
// run before it. It reports whether Redis did.
func (s *Shim) markHeld(key string) bool {
	if err := s.rdb.SAdd(s.ctx, heldkeys.Key, key).Err(); err != nil {
		s.redisError("SADD", key, err)
		return false
	}
	return true
}

// tracking says, for each of reads (GETs of one key), whether its reply
// may carry FlagTracked: it is a cache node's, no write of the key is in
// progress, and the node is the key's Active owner. It must be decided
// before Redis is read: a tracked read's key is added to the keys a cache
// may hold first (markHeld). Such a node is entered in the directory of copies
// first (holders.go), so that every write that starts after the check
// invalidates it.
func (s *Shim) tracking(reads []*request) []bool {
	key := reads[0].key
	cur := s.view.Load().cur
	tracked := make([]bool, len(reads))
	for i, r := range reads {
		if tracked[i] = !r.direct && cur.isServingOwner(key, r.src); tracked[i] {
			s.holders.add(key, r.src)
		}
	}
	if s.locks.waiters(key) != 0 || s.held.holds(key, time.Now()) { // a write is in progress, or the key is held back
		clear(tracked)
	}
	if slices.Contains(tracked, true) && !s.markHeld(key) {
		clear(tracked)
	}
	return tracked
}

// getReplies appends to dst the replies to reads (GETs of one key) that
// Redis answered with status and value, and counts them.
func (s *Shim) getReplies(dst []transport.Request, reads []*request, tracked []bool, status wire.Status, value []byte) []transport.Request {
	result := metrics.StatusResult(status)
	if status == wire.StatusOK {
		result = metrics.ResultMiss // served by storage, not by a cache
	}
	for i, r := range reads {
		s.stats.gets.Add(1)
		if status == wire.StatusNotFound {
			s.stats.getMisses.Add(1)
		}
		s.metrics.requests.Observe(r.op, result, time.Since(r.start))
		reply := s.replyTo(r, status, 0, value)
		if tracked[i] {
			reply.Flags |= wire.FlagTracked
		}
		dst = append(dst, transport.Request{Dst: r.src, Msg: &reply})
	}
	return dst
}

// serveFetch answers a cache node's insertion (DistCache §4.3): under the
// key's lock, so that no write of the key is between its version and its
// Redis value, it reads the version counter C and the value — or that
// Redis does not hold the key, with C too, which the node caches as a
// negative entry. Every write
// acknowledged before has a version ≤ C and every later write gets one > C,
// so the node fills its placeholder only if no invalidation newer than the
// value reached it meanwhile. Only the key's current Active owner may fetch
// it.
func (s *Shim) serveFetch(r *request) {
	unlock, err := s.locks.lock(s.ctx, r.key)
	if err != nil { // shutting down
		reply := s.replyTo(r, wire.StatusInternal, 0, nil)
		s.answerRead(r, &reply)
		return
	}
	var (
		c      uint64
		status = wire.StatusNotOwner
		value  []byte
	)
	// Checked again under the lock: a map change since the handler's check
	// may have taken the key from the sender, and later writes would not
	// invalidate it once PrevMapGrace is over.
	var epoch uint64
	if s.view.Load().cur.isServingOwner(r.key, r.src) {
		s.stats.fetches.Add(1)
		s.holders.add(r.key, r.src) // later writes invalidate it (holders.go)
		c = s.clock.current()
		epoch = s.epoch(r.src)               // under the lock, as the value (leases.go)
		if s.held.holds(r.key, time.Now()) { // released for a client's transaction: not now
			status = wire.StatusUncacheable
		} else {
			status, value = s.redisGetCacheable(r.key)
		}
	} else {
		s.stats.notOwner.Add(1)
	}
	unlock()
	if status != wire.StatusOK && status != wire.StatusNotFound {
		c = 0 // a key not in storage keeps C: the node caches its absence
	}
	s.metrics.requests.Observe(r.op, metrics.StatusResult(status), time.Since(r.start))
	reply := s.replyTo(r, status, c, value)
	if epoch != 0 {
		reply.SetEpoch(epoch)
	}
	s.answerRead(r, &reply)
}

// answerRead sends a read's reply. The read is forgotten first (a read is
// not remembered once answered), so that a retransmission that arrives
// right after the reply is served again rather than dropped as a
// duplicate of a read that is over.
func (s *Shim) answerRead(r *request, reply *wire.Message) {
	s.dedup.abandon(r.dedupKey())
	s.send(r.src, reply)
}
