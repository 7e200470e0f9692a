package wire

import (
	"bytes"
	"net/netip"
	"slices"
	"sync"
	"time"
)

// Reassembly defaults, applied to zero fields of ReassemblyConfig.
const (
	DefaultReassemblyMessages = 1024
	DefaultReassemblyBytes    = 64 << 20
	DefaultReassemblyTimeout  = 2 * time.Second
	DefaultAskAgainAfter      = 50 * time.Millisecond
)

// ReassemblyConfig bounds the messages a Reassembler holds.
type ReassemblyConfig struct {
	// MaxMessages is the most incomplete messages held at once; the oldest
	// is dropped to make room.
	MaxMessages int
	// MaxBytes is the most value bytes held at once; the oldest messages
	// are dropped to make room.
	MaxBytes int64
	// Timeout drops a message whose fragments stop arriving.
	Timeout time.Duration
	// AskAgainAfter is the least time between two MOREs for the same
	// bytes of a message, sent when fragments the receiver holds already
	// arrive again (its sender resent them; see Receive).
	AskAgainAfter time.Duration
}

// ReassemblyStats counts a Reassembler's outcomes.
type ReassemblyStats struct {
	Completed    uint64 // messages reassembled
	Expired      uint64 // dropped by Timeout
	Evicted      uint64 // dropped for MaxMessages or MaxBytes
	Duplicates   uint64 // fragments already held
	Inconsistent uint64 // fragments whose header or key disagree with the first
	Asks         uint64 // MOREs asked for (Receive and AskAgain)
	Pending      int    // incomplete messages now
	PendingBytes int64  // their value bytes
}

type reassemblyKey struct {
	src netip.AddrPort
	op  Op
	seq uint64
}

type span struct{ off, end uint32 }

type partial struct {
	hdr      Header
	key      []byte
	value    []byte
	spans    []span
	received uint32
	touched  time.Time // when its last new fragment arrived
	// prefix is how many bytes from the start are held with no gap;
	// asked is where the window the sender was last asked for starts (0:
	// its first), at time askedAt.
	prefix, asked uint32
	askedAt       time.Time
}

// Reassembler joins the fragments of multi-datagram messages (CableCache's
// multi-packet objects). It is safe for concurrent use.
type Reassembler struct {
	cfg ReassemblyConfig

	mu      sync.Mutex // guards everything below
	pending map[reassemblyKey]*partial
	order   []reassemblyKey // pending messages by their last new fragment, oldest first
	bytes   int64
	stats   ReassemblyStats
}

// NewReassembler returns a Reassembler with cfg's limits.
func NewReassembler(cfg ReassemblyConfig) *Reassembler {
	if cfg.MaxMessages <= 0 {
		cfg.MaxMessages = DefaultReassemblyMessages
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultReassemblyBytes
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultReassemblyTimeout
	}
	if cfg.AskAgainAfter <= 0 {
		cfg.AskAgainAfter = DefaultAskAgainAfter
	}
	return &Reassembler{cfg: cfg, pending: make(map[reassemblyKey]*partial)}
}

// Add takes one fragment p received from src at now. When p completes its
// message, Add returns the message (Key and Value freshly allocated) and
// true. Fragments of a message are told apart by sender, op and sequence
// number; one whose header disagrees with the message's first fragment is
// dropped and counted.
func (r *Reassembler) Add(src netip.AddrPort, p *Packet, now time.Time) (Message, bool) {
	m, ok, _ := r.Receive(src, p, now)
	return m, ok
}

// Receive is Add for a receiver that paces its senders (Window): when it
// returns a nonzero from, the receiver sends MORE for p's message from that
// offset. It asks when the message's bytes up to the end of the window last
// asked for are all held, and when a fragment it holds already arrives
// again — its sender resent the message because it heard nothing — at most
// once per AskAgainAfter.
func (r *Reassembler) Receive(src netip.AddrPort, p *Packet, now time.Time) (m Message, done bool, from uint32) {
	if p.Complete() {
		r.mu.Lock()
		r.stats.Completed++
		r.mu.Unlock()
		return Message{Header: p.Header, Key: bytes.Clone(p.Key), Value: bytes.Clone(p.Fragment)}, true, 0
	}
	k := reassemblyKey{src: src, op: p.Op, seq: p.Seq}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.expireLocked(now)
	pm := r.pending[k]
	if pm == nil && int64(p.ValueLen) > r.cfg.MaxBytes {
		r.stats.Evicted++ // can never fit: drop it rather than everything else
		return Message{}, false, 0
	}
	if pm == nil {
		pm = r.startLocked(k, p, now)
	} else if !sameMessage(&pm.hdr, pm.key, p) {
		r.stats.Inconsistent++
		return Message{}, false, 0
	}
	s := span{p.FragOffset, p.FragOffset + uint32(len(p.Fragment))}
	for _, have := range pm.spans {
		if s.off < have.end && have.off < s.end {
			if s != have {
				r.stats.Inconsistent++
				return Message{}, false, 0
			}
			r.stats.Duplicates++
			if pm.prefix == 0 || now.Sub(pm.askedAt) < r.cfg.AskAgainAfter {
				return Message{}, false, 0
			}
			return Message{}, false, r.askLocked(pm, now)
		}
	}
	pm.spans = append(pm.spans, s)
	copy(pm.value[s.off:], p.Fragment)
	pm.received += s.end - s.off
	if pm.received < pm.hdr.ValueLen {
		r.touchLocked(k, pm, now)
		pm.advance(s)
		if pm.prefix < pm.asked+Window {
			return Message{}, false, 0
		}
		return Message{}, false, r.askLocked(pm, now)
	}
	r.removeLocked(k)
	r.stats.Completed++
	hdr := pm.hdr
	hdr.FragOffset = 0
	return Message{Header: hdr, Key: pm.key, Value: pm.value}, true, 0
}

// AskAgain is for the requester of a reply it holds a part of but that
// stopped arriving: it returns the offset to send MORE from, the reply's
// value length and true when the reply of op and seq from src is pending
// with bytes held from its start, and records the ask.
func (r *Reassembler) AskAgain(src netip.AddrPort, op Op, seq uint64, now time.Time) (from, valueLen uint32, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	pm := r.pending[reassemblyKey{src: src, op: op, seq: seq}]
	if pm == nil || pm.prefix == 0 {
		return 0, 0, false
	}
	return r.askLocked(pm, now), pm.hdr.ValueLen, true
}

// touchLocked records that a new fragment of pm (key k) arrived at now:
// a message sent a window at a time expires when its fragments stop
// arriving, however long it has been arriving.
func (r *Reassembler) touchLocked(k reassemblyKey, pm *partial, now time.Time) {
	pm.touched = now
	if r.order[len(r.order)-1] == k {
		return
	}
	if i := slices.Index(r.order, k); i >= 0 {
		r.order = append(slices.Delete(r.order, i, i+1), k)
	}
}

// askLocked records an ask for pm's bytes from its prefix and returns it.
func (r *Reassembler) askLocked(pm *partial, now time.Time) uint32 {
	pm.asked, pm.askedAt = pm.prefix, now
	r.stats.Asks++
	return pm.prefix
}

// advance moves prefix past the spans that continue it after s arrived:
// only s can have closed the gap at the prefix.
func (pm *partial) advance(s span) {
	if s.off != pm.prefix {
		return
	}
	for moved := true; moved; {
		moved = false
		for _, s := range pm.spans {
			if s.off == pm.prefix {
				pm.prefix, moved = s.end, true
			}
		}
	}
}

func (r *Reassembler) startLocked(k reassemblyKey, p *Packet, now time.Time) *partial {
	need := int64(p.ValueLen)
	for len(r.order) > 0 && (len(r.order) >= r.cfg.MaxMessages || r.bytes+need > r.cfg.MaxBytes) {
		r.removeLocked(r.order[0])
		r.stats.Evicted++
	}
	m := &partial{hdr: p.Header, key: bytes.Clone(p.Key), value: make([]byte, p.ValueLen), touched: now, askedAt: now}
	r.pending[k] = m
	r.order = append(r.order, k)
	r.bytes += need
	return m
}

func sameMessage(h *Header, key []byte, p *Packet) bool {
	return h.ValueLen == p.ValueLen && h.Flags == p.Flags && h.Status == p.Status &&
		h.ValueVersion == p.ValueVersion && h.MapVersion == p.MapVersion &&
		h.Digest == p.Digest && bytes.Equal(key, p.Key)
}

func (r *Reassembler) removeLocked(k reassemblyKey) {
	m, ok := r.pending[k]
	if !ok {
		return
	}
	delete(r.pending, k)
	r.bytes -= int64(m.hdr.ValueLen)
	if i := slices.Index(r.order, k); i >= 0 {
		r.order = slices.Delete(r.order, i, i+1)
	}
}

func (r *Reassembler) expireLocked(now time.Time) {
	for len(r.order) > 0 {
		m := r.pending[r.order[0]]
		if now.Sub(m.touched) < r.cfg.Timeout {
			return
		}
		r.removeLocked(r.order[0])
		r.stats.Expired++
	}
}

// Expire drops the messages whose last new fragment arrived Timeout or
// more before now.
func (r *Reassembler) Expire(now time.Time) {
	r.mu.Lock()
	r.expireLocked(now)
	r.mu.Unlock()
}

// Stats returns the counters.
func (r *Reassembler) Stats() ReassemblyStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.stats
	s.Pending, s.PendingBytes = len(r.pending), r.bytes
	return s
}
