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
}

// ReassemblyStats counts a Reassembler's outcomes.
type ReassemblyStats struct {
	Completed    uint64 // messages reassembled
	Expired      uint64 // dropped by Timeout
	Evicted      uint64 // dropped for MaxMessages or MaxBytes
	Duplicates   uint64 // fragments already held
	Inconsistent uint64 // fragments whose header or key disagree with the first
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
	started  time.Time
}

// Reassembler joins the fragments of multi-datagram messages (CableCache's
// multi-packet objects). It is safe for concurrent use.
type Reassembler struct {
	cfg ReassemblyConfig

	mu      sync.Mutex // guards everything below
	pending map[reassemblyKey]*partial
	order   []reassemblyKey // arrival order of pending messages, oldest first
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
	return &Reassembler{cfg: cfg, pending: make(map[reassemblyKey]*partial)}
}

// Add takes one fragment p received from src at now. When p completes its
// message, Add returns the message (Key and Value freshly allocated) and
// true. Fragments of a message are told apart by sender, op and sequence
// number; one whose header disagrees with the message's first fragment is
// dropped and counted.
func (r *Reassembler) Add(src netip.AddrPort, p *Packet, now time.Time) (Message, bool) {
	if p.Complete() {
		r.mu.Lock()
		r.stats.Completed++
		r.mu.Unlock()
		return Message{Header: p.Header, Key: bytes.Clone(p.Key), Value: bytes.Clone(p.Fragment)}, true
	}
	k := reassemblyKey{src: src, op: p.Op, seq: p.Seq}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.expireLocked(now)
	m := r.pending[k]
	if m == nil && int64(p.ValueLen) > r.cfg.MaxBytes {
		r.stats.Evicted++ // can never fit: drop it rather than everything else
		return Message{}, false
	}
	if m == nil {
		m = r.startLocked(k, p, now)
	} else if !sameMessage(&m.hdr, m.key, p) {
		r.stats.Inconsistent++
		return Message{}, false
	}
	s := span{p.FragOffset, p.FragOffset + uint32(len(p.Fragment))}
	for _, have := range m.spans {
		if s.off < have.end && have.off < s.end {
			if s != have {
				r.stats.Inconsistent++
			} else {
				r.stats.Duplicates++
			}
			return Message{}, false
		}
	}
	m.spans = append(m.spans, s)
	copy(m.value[s.off:], p.Fragment)
	m.received += s.end - s.off
	if m.received < m.hdr.ValueLen {
		return Message{}, false
	}
	r.removeLocked(k)
	r.stats.Completed++
	hdr := m.hdr
	hdr.FragOffset = 0
	return Message{Header: hdr, Key: m.key, Value: m.value}, true
}

func (r *Reassembler) startLocked(k reassemblyKey, p *Packet, now time.Time) *partial {
	need := int64(p.ValueLen)
	for len(r.order) > 0 && (len(r.order) >= r.cfg.MaxMessages || r.bytes+need > r.cfg.MaxBytes) {
		r.removeLocked(r.order[0])
		r.stats.Evicted++
	}
	m := &partial{hdr: p.Header, key: bytes.Clone(p.Key), value: make([]byte, p.ValueLen), started: now}
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
		if now.Sub(m.started) < r.cfg.Timeout {
			return
		}
		r.removeLocked(r.order[0])
		r.stats.Expired++
	}
}

// Expire drops the messages whose first fragment arrived Timeout or more
// before now.
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
