// Package loadgen is the project's own load generator for one data-plane
// endpoint: a closed loop of Concurrency outstanding GETs over one UDP
// socket, sent and received in batches with sendmmsg/recvmmsg so that one
// generator core can keep a cache node on another core busy. It measures
// replies per second, hit ratio and the latency distribution; it is how the
// cache node is compared with redis-benchmark in docs/benchmarks.md.
//
// Requests are pre-encoded per key; each slot of the window carries its own
// sequence numbers (slot | generation<<20), so a late reply to a request
// given up after Timeout is recognised and ignored.
package loadgen

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/distcache/distcache/dataplane/wire"
)

// Limits and defaults.
const (
	MaxConcurrency     = 1 << 20
	DefaultConcurrency = 64
	DefaultBatch       = 32
	DefaultTimeout     = 200 * time.Millisecond
	msgWaitForOne      = 0x10000 // MSG_WAITFORONE: recvmmsg returns once one datagram is in
	scanEvery          = 10 * time.Millisecond
)

// Config configures a run. At least one of Requests and Duration must bound
// it.
type Config struct {
	Target      netip.AddrPort
	Keys        []string // GETs pick keys uniformly at random
	Concurrency int      // outstanding requests
	Batch       int      // datagrams per system call (1: one read and one write per request)
	// Bundle is how many GETs share a request datagram (wire.AppendBundle):
	// the datagram's form of a pipeline of that depth. 0 or 1: a datagram
	// each. The target answers a bundle's GETs in one bundle when it sends
	// bundles (`distcache node --bundle`).
	Bundle   int
	Requests uint64 // stop after this many replies (0: no bound)
	Duration time.Duration
	Timeout  time.Duration // a request unanswered this long is counted lost and replaced
	Seed     uint64
}

// Result is what a run measured.
type Result struct {
	Sent, Replies, Hits, NotFound, Errors, Lost uint64
	Elapsed                                     time.Duration
	Latency                                     *Histogram
}

// Rate is replies per second.
func (r Result) Rate() float64 { return float64(r.Replies) / r.Elapsed.Seconds() }

// HitRatio is the share of replies served from a cache.
func (r Result) HitRatio() float64 {
	if r.Replies == 0 {
		return 0
	}
	return float64(r.Hits) / float64(r.Replies)
}

type slot struct {
	gen  uint64
	sent time.Time
	busy bool
}

type run struct {
	cfg       Config
	conn      *net.UDPConn
	pc        *ipv4.PacketConn
	templates [][]byte
	rng       *rand.Rand
	slots     []slot
	res       Result
	in, out   []ipv4.Message
	outN      int
	recs      [][]byte // a bundle's replies, reused
	// bundled is how many GETs the open bundle, r.out[outN], holds.
	bundled int
}

// Run drives cfg.Target until a bound is reached or ctx ends.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.defaults(); err != nil {
		return Result{}, err
	}
	conn, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(cfg.Target))
	if err != nil {
		return Result{}, fmt.Errorf("cannot dial %s: %w", cfg.Target, err)
	}
	defer conn.Close()
	_ = conn.SetReadBuffer(4 << 20)
	_ = conn.SetWriteBuffer(4 << 20)
	r := &run{cfg: cfg, conn: conn, pc: ipv4.NewPacketConn(conn), slots: make([]slot, cfg.Concurrency),
		rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)), res: Result{Latency: NewHistogram()}}
	for _, k := range cfg.Keys {
		b, err := wire.Encode(&wire.Message{Header: wire.Header{Op: wire.OpGet}, Key: []byte(k)}, wire.MaxDatagram)
		if err != nil {
			return Result{}, fmt.Errorf("cannot encode GET %q: %w", k, err)
		}
		r.templates = append(r.templates, b)
	}
	r.in = newMessages(cfg.Batch, wire.MaxDatagram)
	r.out = newMessages(cfg.Concurrency, bundleLen(cfg.Bundle, wire.HeaderLen+wire.MaxKeyLen))
	if cfg.Bundle > 1 && bundleLen(cfg.Bundle, maxLen(r.templates)) > wire.DefaultDatagram {
		return Result{}, fmt.Errorf("cannot run load: a bundle of %d GETs is longer than a datagram (%d bytes)", cfg.Bundle, wire.DefaultDatagram)
	}
	return r.loop(ctx)
}

func (c *Config) defaults() error {
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.Batch == 0 {
		c.Batch = DefaultBatch
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	switch {
	case len(c.Keys) == 0:
		return errors.New("cannot run load: no keys")
	case c.Concurrency < 1 || c.Concurrency > MaxConcurrency:
		return fmt.Errorf("cannot run load: concurrency %d outside 1…%d", c.Concurrency, MaxConcurrency)
	case c.Batch < 1:
		return fmt.Errorf("cannot run load: batch %d < 1", c.Batch)
	case c.Bundle < 0 || c.Bundle > c.Concurrency:
		return fmt.Errorf("cannot run load: bundle %d outside 0…%d (the concurrency)", c.Bundle, c.Concurrency)
	case c.Requests == 0 && c.Duration <= 0:
		return errors.New("cannot run load: neither a request count nor a duration bounds it")
	}
	c.Batch = min(c.Batch, c.Concurrency)
	return nil
}

// bundleLen is the length of a bundle of n requests of up to size bytes
// each (n ≤ 1: one request alone).
func bundleLen(n, size int) int {
	if n <= 1 {
		return size
	}
	return wire.HeaderLen + n*(wire.BundleRecordPrefix+size)
}

func maxLen(bs [][]byte) int {
	n := 0
	for _, b := range bs {
		n = max(n, len(b))
	}
	return n
}

func newMessages(n, size int) []ipv4.Message {
	ms := make([]ipv4.Message, n)
	for i := range ms {
		ms[i].Buffers = [][]byte{make([]byte, size)}
	}
	return ms
}

func (r *run) loop(ctx context.Context) (Result, error) {
	start := time.Now()
	var deadline time.Time
	if r.cfg.Duration > 0 {
		deadline = start.Add(r.cfg.Duration)
	}
	for i := range r.slots {
		r.issue(i, start)
	}
	if err := r.flush(); err != nil {
		return r.res, err
	}
	// The read deadline is a periodic wake-up: a read that times out is
	// not a failure but the cue to check the bounds and scan for lost
	// requests, so the loop never blocks on replies that will not come.
	nextScan := start.Add(scanEvery)
	if err := r.conn.SetReadDeadline(nextScan); err != nil {
		return r.res, fmt.Errorf("cannot set read deadline: %w", err)
	}
	for {
		now := time.Now()
		if r.done(ctx, now, deadline) {
			break
		}
		if now.After(nextScan) {
			r.scan(now)
			nextScan = now.Add(scanEvery)
			if err := r.conn.SetReadDeadline(nextScan); err != nil {
				return r.res, fmt.Errorf("cannot set read deadline: %w", err)
			}
		}
		n, err := r.pc.ReadBatch(r.in, msgWaitForOne)
		now = time.Now()
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			continue // the wake-up to scan, see above
		case err != nil:
			return r.res, fmt.Errorf("cannot read replies: %w", err)
		}
		for i := range n {
			r.receive(r.in[i].Buffers[0][:r.in[i].N], now)
		}
		if err := r.flush(); err != nil {
			return r.res, err
		}
	}
	r.res.Elapsed = time.Since(start)
	return r.res, nil
}

// done reports whether the run has reached a bound: ctx ended, the deadline
// (zero: none) passed, or cfg.Requests replies arrived. ctx ending is a bound
// like the others, not a failure: Run returns what it measured so far.
func (r *run) done(ctx context.Context, now, deadline time.Time) bool {
	return ctx.Err() != nil ||
		(!deadline.IsZero() && now.After(deadline)) ||
		(r.cfg.Requests > 0 && r.res.Replies >= r.cfg.Requests)
}

// issue queues a new request for slot i: in a datagram of its own, or
// in the open bundle, which it closes when it is full (Config.Bundle).
func (r *run) issue(i int, now time.Time) {
	s := &r.slots[i]
	s.gen++
	s.sent, s.busy = now, true
	t := r.templates[r.rng.IntN(len(r.templates))]
	r.res.Sent++
	m := &r.out[r.outN]
	if r.cfg.Bundle <= 1 {
		b := m.Buffers[0][:len(t)]
		copy(b, t)
		binary.BigEndian.PutUint64(b[8:], uint64(i)|s.gen<<20)
		m.Buffers[0] = b
		r.outN++
		return
	}
	b := m.Buffers[0]
	if r.bundled == 0 {
		b = b[:wire.HeaderLen]
	}
	b = binary.BigEndian.AppendUint16(b, uint16(len(t)))
	rec := len(b)
	b = append(b, t...)
	binary.BigEndian.PutUint64(b[rec+8:], uint64(i)|s.gen<<20)
	m.Buffers[0] = b
	if r.bundled++; r.bundled == r.cfg.Bundle {
		r.closeBundle()
	}
}

// closeBundle ends the open bundle: a bundle of its GETs, or the GET
// alone when it holds one (a bundle holds at least two).
func (r *run) closeBundle() {
	if r.bundled == 0 {
		return
	}
	m := &r.out[r.outN]
	b := m.Buffers[0]
	if r.bundled == 1 {
		rec := wire.HeaderLen + wire.BundleRecordPrefix
		m.Buffers[0] = b[:copy(b, b[rec:])]
	} else {
		wire.PutBundleHeader(b, len(b)-wire.HeaderLen)
	}
	r.bundled = 0
	r.outN++
}

func (r *run) flush() error {
	r.closeBundle()
	for sent := 0; sent < r.outN; {
		n, err := r.pc.WriteBatch(r.out[sent:r.outN], 0)
		if err != nil {
			return fmt.Errorf("cannot send requests: %w", err)
		}
		sent += n
	}
	for i := range r.out[:r.outN] {
		r.out[i].Buffers[0] = r.out[i].Buffers[0][:cap(r.out[i].Buffers[0])]
	}
	r.outN = 0
	return nil
}

// receive takes a reply datagram, or a bundle of them (a node sends the
// replies of one receive batch to the same client together).
func (r *run) receive(b []byte, now time.Time) {
	recs, err := wire.AppendMessages(r.recs[:0], b)
	r.recs = recs[:0]
	if err != nil {
		r.res.Errors++
		return
	}
	for _, rec := range recs {
		r.receiveOne(rec, now)
	}
}

func (r *run) receiveOne(b []byte, now time.Time) {
	if len(b) < wire.HeaderLen || wire.Op(b[3]) != wire.OpGetReply {
		r.res.Errors++
		return
	}
	seq := binary.BigEndian.Uint64(b[8:])
	i := int(seq & (1<<20 - 1))
	if i >= len(r.slots) || !r.slots[i].busy || r.slots[i].gen != seq>>20 {
		return // a reply to a request already given up
	}
	s := &r.slots[i]
	r.res.Replies++
	switch st := wire.Status(b[5]); {
	case st == wire.StatusOK && wire.Flag(b[4])&wire.FlagHit != 0:
		r.res.Hits++
	case st == wire.StatusNotFound:
		r.res.NotFound++
	case st != wire.StatusOK:
		r.res.Errors++
	}
	r.res.Latency.Record(now.Sub(s.sent))
	s.busy = false
	r.issue(i, now)
}

// scan replaces requests unanswered for Timeout.
func (r *run) scan(now time.Time) {
	for i := range r.slots {
		if s := &r.slots[i]; s.busy && now.Sub(s.sent) > r.cfg.Timeout {
			r.res.Lost++
			r.issue(i, now)
			if r.outN == len(r.out) {
				_ = r.flush()
			}
		}
	}
	_ = r.flush()
}
