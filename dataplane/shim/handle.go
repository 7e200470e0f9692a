package shim

import (
	"net/netip"
	"time"

	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
)

// request is a request copied out of the transport's buffer.
type request struct {
	src    netip.AddrPort
	op     wire.Op
	seq    uint64
	key    string
	value  []byte // PUT's value, RMW's operation
	direct bool   // a GET with FlagDirect: a client's, not a cache node's
	first  bool   // a write's first datagram (FlagFirst): applied nowhere yet
	// readOnly: an RMW that runs a read-only command (readOnlyCommand),
	// served as a read: no lock, no phase 1 or 2.
	readOnly bool
	// release: an RMWRelease, always served alone (serveWrite), whose
	// phase 1 runs and may take the key out of the held set.
	release bool
	start   time.Time
}

// dedupKey is r's identity in the dedup table.
func (r *request) dedupKey() dedupKey { return dedupKey{src: r.src, seq: r.seq, op: r.op} }

// handle runs on the transport's readers: it answers what needs no Redis
// at once, through the reader's reply batch out, and hands the rest,
// copied, to a goroutine. It never waits, so the reader keeps reading the
// acknowledgements of the shim's own coherence calls however busy the
// emulated capacity is: requests wait for their work unit on their
// goroutines (serve). A retransmission of a request still being served is
// dropped, its reply will answer it; one of a completed write gets the
// stored reply.
func (s *Shim) handle(out transport.Sender, src netip.AddrPort, req *wire.Message) {
	now := time.Now()
	switch req.Op {
	case wire.OpGet, wire.OpPut, wire.OpDel, wire.OpFetch, wire.OpRMW:
	case wire.OpPing:
		s.replyNow(out, src, req, wire.StatusOK)
		return
	case wire.OpRenew:
		s.serveRenew(out, src, req, now)
		return
	default:
		s.log.Debug("unexpected request", "op", req.Op, "from", src)
		s.replyNow(out, src, req, wire.StatusInternal)
		return
	}
	key := string(req.Key) // a copy: req aliases the read buffer
	cur := s.view.Load().cur
	if !cur.ownsKey(key) || (req.Op == wire.OpFetch && !cur.isServingOwner(key, src)) {
		s.stats.notOwner.Add(1)
		s.metrics.requests.Observe(req.Op, metrics.StatusResult(wire.StatusNotOwner), time.Since(now))
		s.replyNow(out, src, req, wire.StatusNotOwner)
		return
	}
	dk := dedupKey{src: src, seq: req.Seq, op: req.Op}
	switch res, stored := s.dedup.begin(dk, now); res {
	case dedupInProgress:
		s.stats.duplicates.Add(1)
		return // the reply will come when the request is served
	case dedupDone:
		s.stats.duplicates.Add(1)
		stored.Key = req.Key
		s.sendVia(out, src, &stored)
		return
	}
	select {
	case s.sem <- struct{}{}:
	default:
		s.dedup.abandon(dk)
		s.stats.overloaded.Add(1)
		s.metrics.requests.Observe(req.Op, metrics.StatusResult(wire.StatusOverloaded), time.Since(now))
		s.replyNow(out, src, req, wire.StatusOverloaded)
		return
	}
	switch req.Op { // a request counted once, not its retransmissions
	case wire.OpGet:
		s.top.Read(req.Key)
	case wire.OpPut, wire.OpDel, wire.OpRMW:
		s.top.Write(req.Key)
	}
	r := &request{src: src, op: req.Op, seq: req.Seq, key: key, direct: req.Has(wire.FlagDirect),
		first: req.Op.IsWrite() && req.Has(wire.FlagFirst), start: now}
	if req.Op == wire.OpPut || req.Op == wire.OpRMW {
		r.value = append(make([]byte, 0, len(req.Value)), req.Value...)
		r.readOnly = req.Op == wire.OpRMW && readOnlyCommand(r.value)
		r.release = req.Op == wire.OpRMW && len(r.value) == 1 && wire.RMW(r.value[0]) == wire.RMWRelease
	}
	switch {
	case r.readOnly, r.release:
		s.goServe(r)
	case req.Op == wire.OpGet && s.batches():
		s.reads.add(r) // served when the receive batch ends
	case req.Op.IsWrite() && s.batches():
		s.writes.add(r) // served when the receive batch ends
	default:
		s.goServe(r)
	}
}

// serve runs one request on its own goroutine. The request first takes its
// work unit from the emulated capacity (a write's copies are charged after
// its phase 1); a GET of a key whose read already waits for its unit joins
// that read instead (queuedReads). A read that would get its unit only
// after QueueTimeout is shed with StatusOverloaded, with the GETs that
// joined it: its client has given up on it by then. A write takes its
// units ahead of the queued reads (capacity.Limiter.TakeAhead), waiting
// only for other writes: while it runs, its key's later writes wait for
// its lock and its key's readers are parked at the owners it invalidated,
// so every read it waited behind would make them all wait. It is
// never shed: it is at most once, and its client retransmits it.
func (s *Shim) serve(r *request) {
	defer func() { <-s.sem }()
	if r.readOnly {
		s.serveCommandRead(r)
		return
	}
	if r.op == wire.OpPut || r.op == wire.OpDel || r.op == wire.OpRMW {
		s.work.TakeAhead(1)
		s.serveWrite(r)
		return
	}
	reads := []*request{r}
	var qr *queuedRead
	if r.op == wire.OpGet {
		var joined bool
		if qr, joined = s.queued.join(r); joined {
			s.stats.coalescedGets.Add(1)
			return // answered by the read it joined
		}
	}
	ok := s.takeUnit(r.start.Add(s.cfg.QueueTimeout))
	if qr != nil {
		reads = append(reads, s.queued.start(r.key, qr)...)
	}
	switch {
	case !ok:
		s.shed(reads)
	case r.op == wire.OpGet:
		s.serveGets(reads)
	default:
		s.serveFetch(r)
	}
}

// shed answers reads with StatusOverloaded.
func (s *Shim) shed(reads []*request) {
	for _, r := range reads {
		s.stats.shed.Add(1)
		s.metrics.requests.Observe(r.op, metrics.StatusResult(wire.StatusOverloaded), time.Since(r.start))
		reply := s.replyTo(r, wire.StatusOverloaded, 0, nil)
		s.answerRead(r, &reply)
	}
}

// mapVersion is the current map's version, for reply headers.
func (s *Shim) mapVersion() uint64 {
	if v := s.view.Load(); v != nil {
		return uint64(v.cur.version)
	}
	return 0
}

// replyNow answers req, whose key may alias the read buffer, from the
// reader goroutine with status and no value.
func (s *Shim) replyNow(out transport.Sender, src netip.AddrPort, req *wire.Message, status wire.Status) {
	m := wire.Message{
		Header: wire.Header{Op: req.Op.Reply(), Seq: req.Seq, Digest: req.Digest, Status: status, MapVersion: s.mapVersion()},
		Key:    req.Key,
	}
	s.sendVia(out, src, &m)
}

// replyTo builds the reply to r.
func (s *Shim) replyTo(r *request, status wire.Status, version uint64, value []byte) wire.Message {
	return wire.Message{
		Header: wire.Header{Op: r.op.Reply(), Seq: r.seq, Status: status, ValueVersion: version, MapVersion: s.mapVersion()},
		Key:    []byte(r.key),
		Value:  value,
	}
}

// send sends m to dst from a request's goroutine.
func (s *Shim) send(dst netip.AddrPort, m *wire.Message) { s.sendVia(s.ep, dst, m) }

// sendVia sends m to dst through out; a lost reply is retransmitted by the
// requester.
func (s *Shim) sendVia(out transport.Sender, dst netip.AddrPort, m *wire.Message) {
	if err := out.Send(dst, m); err != nil {
		s.log.Debug("cannot send reply", "op", m.Op, "to", dst, "err", err)
	}
}

// redisError counts and logs a failed Redis command.
func (s *Shim) redisError(cmd, key string, err error) {
	s.stats.redisErrors.Add(1)
	s.metrics.redisErrors.Inc()
	s.log.Warn("Redis command failed", "cmd", cmd, "key", key, "err", err)
}
