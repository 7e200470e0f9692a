package transport

import (
	"bytes"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/distcache/distcache/dataplane/wire"
)

// Flow control (wire.Window). A message of more than one window is sent a
// window at a time: Send sends the fragments of its first window and keeps
// a copy in the endpoint's outbox; the receiver, holding every byte of
// that window, asks with MORE for the window from its first missing byte,
// which the endpoint sends from the copy; and so on. Requests and replies
// alike: a large PUT is paced by its shim, a large GET_REPLY by its
// client. A window lost on the way is asked for again: a requester's
// retransmit asks for the rest of a reply it holds a part of
// (Reassembler.AskAgain) instead of resending its request, and a receiver
// that sees fragments it holds arrive again (its requester resent the
// request) asks for what it misses.

// DefaultOutboxBytes bounds the value bytes of the messages an endpoint
// keeps for their receivers' MOREs.
const DefaultOutboxBytes = 64 << 20

// rangeSender sends the fragments of a message that start in a range of
// its value.
type rangeSender interface {
	// sendRange sends the fragments of m from offset from (where one
	// starts) while they start before end.
	sendRange(dst netip.AddrPort, m *wire.Message, from, end int) error
}

// outKey names a message sent: its receiver and sequence number.
type outKey struct {
	dst netip.AddrPort
	seq uint64
}

// outMsg is a kept message and when it was sent.
type outMsg struct {
	m  wire.Message // its own copy
	at time.Time
}

// outbox keeps the messages of more than one window an endpoint sent, for
// the MOREs of their receivers, until they expire (the receivers'
// reassembly timeout) or the bytes kept reach their bound (oldest first).
type outbox struct {
	ttl      time.Duration
	maxBytes int64

	mu    sync.Mutex // guards msgs, order and bytes
	msgs  map[outKey]*outMsg
	order []outKey // oldest first
	bytes int64
}

func newOutbox(ttl time.Duration, maxBytes int64) *outbox {
	if ttl <= 0 {
		ttl = wire.DefaultReassemblyTimeout
	}
	return &outbox{ttl: ttl, maxBytes: maxBytes, msgs: make(map[outKey]*outMsg)}
}

// put keeps a copy of m, sent to dst at now, in place of any message of
// the same sequence number kept for dst.
func (o *outbox) put(dst netip.AddrPort, m *wire.Message, now time.Time) {
	k := outKey{dst, m.Seq}
	c := &outMsg{m: wire.Message{Header: m.Header, Key: bytes.Clone(m.Key), Value: bytes.Clone(m.Value)}, at: now}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.removeLocked(k)
	o.expireLocked(now)
	for len(o.order) > 0 && o.bytes+int64(len(m.Value)) > o.maxBytes {
		o.removeLocked(o.order[0])
	}
	o.msgs[k] = c
	o.order = append(o.order, k)
	o.bytes += int64(len(m.Value))
}

// get returns the message of seq kept for dst, if its key and value length
// are the ones a MORE names.
func (o *outbox) get(dst netip.AddrPort, seq uint64, key []byte, valueLen uint32, now time.Time) *wire.Message {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.expireLocked(now)
	c := o.msgs[outKey{dst, seq}]
	if c == nil || uint32(len(c.m.Value)) != valueLen || !bytes.Equal(c.m.Key, key) {
		return nil
	}
	return &c.m
}

func (o *outbox) removeLocked(k outKey) {
	c, ok := o.msgs[k]
	if !ok {
		return
	}
	delete(o.msgs, k)
	o.bytes -= int64(len(c.m.Value))
	if i := slices.Index(o.order, k); i >= 0 {
		o.order = slices.Delete(o.order, i, i+1)
	}
}

func (o *outbox) expireLocked(now time.Time) {
	for len(o.order) > 0 && now.Sub(o.msgs[o.order[0]].at) >= o.ttl {
		o.removeLocked(o.order[0])
	}
}

// firstWindow returns where the first window of m to dst ends: the end of
// its value when it fits one window; otherwise wire.Window, and m is kept
// for the MOREs of dst.
func (e *Endpoint) firstWindow(dst netip.AddrPort, m *wire.Message) int {
	if len(m.Value) <= wire.Window {
		return len(m.Value)
	}
	e.out.put(dst, m, time.Now())
	return wire.Window
}

// ask sends src, the sender of p's message, a MORE for its bytes from
// offset from.
func (e *Endpoint) ask(out Sender, src netip.AddrPort, p *wire.Packet, from uint32) {
	more := wire.NewMore(p.Seq, p.Key, p.ValueLen, from)
	if err := out.Send(src, &more); err != nil {
		e.cfg.Logger.Debug("cannot ask for more", "to", src, "seq", p.Seq, "from", from, "err", err)
		return
	}
	e.stats.moreOut.Add(1)
}

// resume serves MORE p from src: it sends the window of the kept message
// that p asks for, or counts p stale when the message is no longer kept.
func (e *Endpoint) resume(out rangeSender, src netip.AddrPort, p *wire.Packet) {
	e.stats.moreIn.Add(1)
	m := e.out.get(src, p.Seq, p.Key, p.ValueLen, time.Now())
	if m == nil {
		e.stats.moreStale.Add(1)
		return
	}
	if !m.Op.IsReply() {
		e.progressed(src, p.Seq)
	}
	from := int(p.FragOffset)
	// A receiver asks from the end of a fragment it holds; a MORE from
	// elsewhere gets the fragment that holds its offset, so that the
	// fragments it gets are the ones the message was cut into.
	start := wire.FragmentStart(from, e.cfg.Datagram, len(m.Key), e.trailer(m.Op, src))
	if err := out.sendRange(src, m, start, from+wire.Window); err != nil {
		e.cfg.Logger.Debug("cannot send the window asked for", "to", src, "seq", p.Seq, "from", from, "err", err)
	}
}
