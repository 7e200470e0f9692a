package shim

import (
	"sync"

	"github.com/distcache/distcache/dataplane/transport"
)

// requestQueue holds the GETs, or the writes (writebatch.go), of the
// receive batches being served. For GETs: the reader
// that served a batch serves them when the batch ends
// (transport.Config.AfterBatch, serveQueued): on one goroutine, their
// keys read from Redis in one round trip and their replies sent in one
// transport.Endpoint.SendMany (with bundles, a datagram per requester),
// instead of a goroutine, a wait for the Redis round trip and a send each.
// A cache node forwards a receive batch's misses to a shim together
// (package cachenode), so the batch reaches the shim in one datagram and
// leaves it in one. Only without an emulated capacity: with one, each GET
// waits for its own work unit (serve), and a batch served together would
// hold its first reads behind its last one's unit.
type requestQueue struct {
	mu sync.Mutex // guards rs
	rs []*request
}

// add queues r until its receive batch ends.
func (q *requestQueue) add(r *request) {
	q.mu.Lock()
	q.rs = append(q.rs, r)
	q.mu.Unlock()
}

// take empties the queue and returns what it held.
func (q *requestQueue) take() []*request {
	q.mu.Lock()
	defer q.mu.Unlock()
	rs := q.rs
	q.rs = nil
	return rs
}

// batches says whether GETs, and writes (writebatch.go), are served a
// receive batch at a time: only without an emulated capacity, where each
// request waits for its own work unit.
func (s *Shim) batches() bool { return !s.work.Limited() }

// serveQueued serves what the receive batch queued, on goroutines of the
// pool: its GETs together (serveReadBatch), its writes together
// (serveWriteBatch), or either alone as any request.
func (s *Shim) serveQueued() {
	s.serveTaken(s.reads.take(), s.serveReadBatch)
	s.serveTaken(s.writes.take(), s.serveWriteBatch)
}

// serveTaken serves the requests a queue held: one alone (serve), several
// with together.
func (s *Shim) serveTaken(rs []*request, together func([]*request)) {
	switch len(rs) {
	case 0:
	case 1:
		s.goServe(rs[0])
	default:
		if !s.tasks.Go(func() { together(rs) }) {
			s.dropUnserved(rs...)
		}
	}
}

// goServe serves r alone, on a goroutine of the pool (serve).
func (s *Shim) goServe(r *request) {
	if !s.tasks.Go(func() { s.serve(r) }) {
		s.dropUnserved(r)
	}
}

// dropUnserved forgets requests no goroutine will serve (the shim is
// closing: nobody will be answered): their tokens and dedup entries.
func (s *Shim) dropUnserved(rs ...*request) {
	for _, r := range rs {
		<-s.sem
		s.dedup.abandon(r.dedupKey())
	}
}

// serveReadBatch serves GETs together. Each joins the queued read of its
// key or leads one, as in serve; each lead takes its work unit (at once:
// there is no emulated capacity, but the units are the load a shim
// reports) and collects the GETs that joined it; the leads' keys are read
// in one Redis round trip, after every GET that joined them arrived; and
// every reply leaves in one SendMany.
func (s *Shim) serveReadBatch(rs []*request) {
	defer func() {
		for range rs {
			<-s.sem
		}
	}()
	s.stats.readBatches.Add(1)
	s.stats.batchedReads.Add(uint64(len(rs)))
	var (
		leads []*request
		qrs   []*queuedRead
	)
	for _, r := range rs {
		qr, joined := s.queued.join(r)
		if joined {
			s.stats.coalescedGets.Add(1)
			continue // answered by the read it joined
		}
		leads, qrs = append(leads, r), append(qrs, qr)
	}
	groups := make([][]*request, 0, len(leads))
	keys := make([]string, 0, len(leads))
	for i, r := range leads {
		ok := s.takeUnit(r.start.Add(s.cfg.QueueTimeout))
		reads := append([]*request{r}, s.queued.start(r.key, qrs[i])...)
		if !ok {
			s.shed(reads)
			continue
		}
		groups, keys = append(groups, reads), append(keys, r.key)
	}
	if len(keys) == 0 {
		return
	}
	tracked := make([][]bool, len(groups))
	for i, reads := range groups {
		tracked[i] = s.tracking(reads)
	}
	var (
		replies []transport.Request
		done    []*request
	)
	for i, p := range s.redisq.GetMany(s.ctx, keys) {
		status, value := s.getStatus(p.Key, p.Value, p.Err)
		replies = s.getReplies(replies, groups[i], tracked[i], status, value)
		done = append(done, groups[i]...)
	}
	s.answerReads(done, replies)
}

// answerReads sends the replies to reads together; the reads are done,
// so they leave the dedup table first, as answerRead's do.
func (s *Shim) answerReads(reads []*request, replies []transport.Request) {
	for _, r := range reads {
		s.dedup.abandon(r.dedupKey())
	}
	if err := s.ep.SendMany(replies); err != nil {
		s.log.Debug("cannot send replies", "replies", len(replies), "err", err)
	}
}
