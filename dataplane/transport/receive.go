package transport

import (
	"net/netip"
	"time"

	"github.com/distcache/distcache/dataplane/wire"
)

// pass is which messages of a receive batch a reader serves in one pass
// over it: all of them, or (Config.Urgent) the urgent ones first and the
// rest in a second pass.
type pass int

const (
	passAll pass = iota
	passUrgent
	passRest
)

// counts says whether the pass is the first to see the batch's datagrams,
// which counts them.
func (p pass) counts() bool { return p != passRest }

// receiver dispatches what one reader goroutine receives: single datagrams
// and the records of bundles (wire.SplitBundle), each record served exactly
// as if it had arrived alone.
type receiver struct {
	e    *Endpoint
	h    Handler
	out  reader
	msg  *wire.Message // reused for every message handed out
	recs [][]byte      // a bundle's records, reused
	// now is the time of the batch being served, read when first needed
	// (zero until then): the replies of one batch share one reading.
	now time.Time
}

// clock is the time of the batch being served.
func (rx *receiver) clock() time.Time {
	if rx.now.IsZero() {
		rx.now = time.Now()
	}
	return rx.now
}

// datagram serves datagram b from src, or the records of the bundle it
// is, that pass p selects.
func (rx *receiver) datagram(src netip.AddrPort, b []byte, p pass) {
	e := rx.e
	if p.counts() {
		e.stats.datagramsIn.Add(1)
		e.stats.bytesIn.Add(uint64(len(b)))
	}
	recs, err := wire.AppendMessages(rx.recs[:0], b)
	rx.recs = recs[:0]
	if err != nil { // only a bundle fails here: a lone datagram is parsed when served
		if p.counts() {
			e.stats.malformed.Add(1)
			e.cfg.Logger.Debug("dropped malformed bundle", "from", src, "bytes", len(b), "err", err)
		}
		return
	}
	if p.counts() && len(recs) > 1 { // a bundle: it holds at least two
		e.stats.bundlesIn.Add(1)
		e.stats.bundledIn.Add(uint64(len(recs)))
	}
	for _, r := range recs {
		if rx.selects(p, r) {
			rx.message(src, r)
		}
	}
}

// selects says whether pass p serves datagram b, by its op alone
// (wire.PeekOp): b is parsed, and a malformed one counted, when it is
// served.
func (rx *receiver) selects(p pass, b []byte) bool {
	if p == passAll {
		return true
	}
	op := wire.PeekOp(b)
	urgent := op != 0 && rx.e.cfg.Urgent(op)
	return urgent == (p == passUrgent)
}

// message parses, verifies and dispatches one message datagram,
// reassembling fragments.
func (rx *receiver) message(src netip.AddrPort, b []byte) {
	e := rx.e
	p, err := wire.Parse(b)
	if err != nil {
		e.stats.malformed.Add(1)
		e.cfg.Logger.Debug("dropped malformed datagram", "from", src, "bytes", len(b), "err", err)
		return
	}
	if e.cfg.Auth != nil && !e.authentic(b, &p, src) {
		e.stats.macRejected[p.Op%opSlots].Add(1)
		e.cfg.Logger.Debug("dropped datagram failing its MAC", "from", src, "op", p.Op, "signed", p.Has(wire.FlagAuth))
		return
	}
	if e.cfg.Auth != nil && p.Has(wire.FlagAuth) && !e.fresh(&p, src) {
		return
	}
	if p.Op == wire.OpMore {
		e.resume(rx.out, src, &p)
		return
	}
	if !p.Complete() {
		m, ok, from := e.reasm.Receive(src, &p, time.Now())
		if from != 0 {
			e.ask(rx.out, src, &p, from)
		}
		if !ok && p.Op.IsReply() {
			e.progressed(src, p.Seq)
		}
		if ok {
			e.dispatch(rx, src, &m, true)
		}
		return
	}
	*rx.msg = wire.Message{Header: p.Header, Key: p.Key, Value: p.Fragment}
	e.dispatch(rx, src, rx.msg, false)
}

// batch serves the n datagrams the reader received and sends the replies
// their handlers queued.
func (rx *receiver) batch(n int) {
	e, r := rx.e, rx.out
	e.stats.receives.Add(1)
	rx.now = time.Time{}
	if e.cfg.Urgent != nil && n > 1 {
		for i := range n {
			b, src := r.datagram(i)
			rx.datagram(src, b, passUrgent)
		}
		for i := range n {
			b, src := r.datagram(i)
			rx.datagram(src, b, passRest)
		}
	} else {
		for i := range n {
			b, src := r.datagram(i)
			rx.datagram(src, b, passAll)
		}
	}
	if e.cfg.AfterBatch != nil {
		e.cfg.AfterBatch()
	}
	r.Flush()
}
