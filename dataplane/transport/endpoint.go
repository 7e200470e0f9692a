// Package transport is the UDP endpoint every data-plane role shares: one
// socket on the role's port, reader goroutines that parse each datagram
// (package wire), reassemble multi-datagram messages, hand requests to the
// role's handler and match replies to outstanding calls by sequence number.
//
// The hit path stays allocation-free: a request whose value fits one
// datagram is handed to the handler aliasing the reader's buffer, and Send
// encodes into pooled buffers. Malformed datagrams are counted and dropped.
//
// With a data-plane key (Config.Auth), writes, coherence messages and cache
// fills are signed per datagram and verified before reassembly or
// dispatch; those failing it are counted by op and dropped. GETs and their
// replies are neither signed nor verified.
//
// On Linux each reader receives up to Config.Batch datagrams with one
// recvmmsg(2) and sends the replies its handler produced for them with one
// sendmmsg(2), so a busy node pays two system calls per batch instead of two
// per request. An idle socket still answers every datagram at once: recvmmsg
// returns what has arrived, it does not wait for a full batch. Send, which
// callers use from their own goroutines (a client's requests, a cache
// node's forwarded misses, a shim's replies), combines too: a Send that
// finds another goroutine sending leaves its datagrams in a queue that
// goroutine sends next, with one sendmmsg (combine_linux.go). A queued
// datagram that cannot be sent is counted in Stats.SendErrors, not
// returned to its Send: to the sender it is a datagram lost. With
// Config.Bundle, the messages of one such batch that go to the same peer
// travel in one bundle datagram (package wire's BUNDLE, out_linux.go);
// every endpoint receives bundles, serving each record as if it had
// arrived alone (receive.go).
//
// A polled endpoint (Config.Polled, Linux) has no reader goroutine: its
// owner's event loop waits for the socket in its own epoll and receives
// with a Poller, so replies are dispatched on the loop's thread (a
// gateway's loops, poll_linux.go). Its socket is opened with system calls
// and kept out of the Go runtime's poller (rawsocket_linux.go).
//
// Calls retransmit with the same sequence number until the context ends, so
// receivers must treat a repeated (sender, sequence number) as the same
// request; the storage shim deduplicates writes for that reason.
package transport

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distcache/distcache/dataplane/antireplay"
	"github.com/distcache/distcache/dataplane/wire"
)

// Defaults applied to zero fields of Config.
const (
	DefaultRetransmit = 50 * time.Millisecond
	// DefaultMaxRetransmit caps the doubling retransmission interval.
	DefaultMaxRetransmit = 800 * time.Millisecond
	DefaultSocketBuf     = 4 << 20
	DefaultBatch         = 32
	// MaxBatch bounds Config.Batch: each reader holds Batch receive buffers
	// of wire.MaxDatagram bytes.
	MaxBatch = 1024
)

// ErrClosed is returned by calls on a closed Endpoint.
var ErrClosed = errors.New("endpoint closed")

// Sender sends a message, split into as many datagrams as its value needs.
// *Endpoint is a Sender; so is the reply queue a Handler is given.
type Sender interface {
	Send(dst netip.AddrPort, m *wire.Message) error
}

// Handler serves a request from src. req's Key and Value alias a receive
// buffer and are valid only until Handler returns; a handler that keeps them
// or blocks must copy them and hand the work to another goroutine. Handlers
// run on the reader goroutines, concurrently when Config.Readers > 1.
//
// Replies sent through out are encoded at once and sent with the rest of
// the reader's batch when the handler of the batch's last datagram returns,
// or earlier when a handler calls out's Flush method (out has one: assert
// an interface with Flush()), as one about to block on purpose does so that
// the replies already finished do not wait for it. out belongs to the
// reader goroutine and must not be kept or handed to another goroutine (use
// the Endpoint there). Kernel send errors of queued replies are counted in
// Stats.SendErrors, not returned.
type Handler func(out Sender, src netip.AddrPort, req *wire.Message)

// Config configures an Endpoint.
type Config struct {
	// Addr is the UDP address to listen on, e.g. "127.0.0.1:7000"; port 0
	// picks a free port.
	Addr string
	// Datagram is the largest datagram sent (default wire.DefaultDatagram).
	Datagram int
	// Readers is the number of goroutines reading the socket (default 1).
	Readers int
	// Batch is the most datagrams a reader receives, and replies it sends,
	// per system call (default DefaultBatch; 1 reads and sends each
	// datagram on its own). Batching needs Linux; elsewhere it is 1.
	Batch int
	// Retransmit is the interval after which Call first sends a request
	// again; each further resend waits twice as long as the one before, up
	// to MaxRetransmit (default DefaultMaxRetransmit), so that a busy peer
	// whose queue holds the request already is not flooded with copies.
	Retransmit, MaxRetransmit time.Duration
	// SocketBuffer is the requested SO_RCVBUF and SO_SNDBUF in bytes.
	SocketBuffer int
	// Urgent, when set, marks the requests a reader serves ahead of the
	// others of its receive batch: it handles the batch's datagrams whose
	// op is urgent first, then the rest in the order they arrived. A
	// server whose handler blocks on purpose (an emulated capacity) keeps
	// its control traffic, such as coherence and health probes, from
	// queueing behind the requests it serves, as a switch serves control
	// packets from a queue of higher priority.
	Urgent func(wire.Op) bool
	// Polled starts no reader goroutine: the endpoint's owner receives
	// with a Poller from its own event loop (poll_linux.go), and must, for
	// any Call to end before its deadline.
	Polled bool
	// AfterBatch, when set, is called by a reader once it has handed every
	// message of a receive batch to the Handler, before the replies it
	// queued leave (with Batch 1 each reply leaves at once): a handler can
	// gather the work of a batch and start it together (a cache node's
	// misses, one backend call per shim).
	AfterBatch func()
	// Auth, when set, authenticates the messages that change what a
	// receiver stores or serves (wire.Authenticated): they are sent signed
	// (wire.FlagAuth), and those received without a valid tag — or any
	// datagram with FlagAuth and a bad tag — are dropped and counted in
	// Stats.MACRejected. Nil sends and accepts them unsigned. A
	// *wireauth.Keyring is one.
	Auth Authenticator
	// Unsigned, when set with Auth, names the peers that exchange the
	// authenticated ops without a tag: switches, whose pipelines cannot
	// compute the MAC. Messages to them are sent unsigned, and theirs are
	// accepted unsigned (a signed one is still verified). The data-plane
	// key then does not cover those peers' coherence messages: the
	// network between them and this endpoint is trusted instead.
	Unsigned func(peer netip.AddrPort) bool
	// Replay says whether signed datagrams carry a stamp (wire.Stamp) and
	// whether signed datagrams without one are accepted; received stamps
	// are always checked against replays (package antireplay), and those
	// refused are dropped and counted in Stats.ReplayRejected. It matters
	// only with Auth. The zero value, ReplayAccept, is what a process of
	// a version before stamps does, so a cluster upgrades in three steps
	// (docs/dataplane.md). It is the least mode the endpoint uses: the
	// partition maps its owner installs may raise it (Endpoint.FollowMap).
	Replay ReplayMode
	// Sender names the process for its stamps, the same across its
	// restarts (a cache node's member, a shim's shard); with the
	// endpoint's port it makes the sender id (antireplay.SenderID). Empty:
	// a new random sender each start, as for clients.
	Sender string
	// ReplayFilter bounds the senders the endpoint remembers.
	ReplayFilter antireplay.Config
	// Bundle sends the datagrams that leave together for the same peer (a
	// combined Send's, a reader's replies) as one bundle datagram (package
	// wire) of at most Datagram bytes, instead of a datagram per message.
	// Bundles are received either way. It is off by default: a process of
	// a version before bundles drops them, so a cluster turns it on once
	// every process parses them.
	Bundle bool
	// Reassembly bounds the multi-datagram messages held.
	Reassembly wire.ReassemblyConfig
	// Logger receives debug records about dropped datagrams.
	Logger *slog.Logger
}

// Authenticator signs datagrams and verifies their tags.
type Authenticator interface {
	wire.Signer
	// Verify reports whether tag is data's tag under an accepted key.
	Verify(data, tag []byte) bool
}

func (c Config) withDefaults() Config {
	if c.Datagram == 0 {
		c.Datagram = wire.DefaultDatagram
	}
	if c.Readers <= 0 {
		c.Readers = 1
	}
	if c.Batch <= 0 {
		c.Batch = DefaultBatch
	}
	if c.Retransmit == 0 {
		c.Retransmit = DefaultRetransmit
	}
	if c.MaxRetransmit < c.Retransmit {
		c.MaxRetransmit = max(DefaultMaxRetransmit, c.Retransmit)
	}
	if c.SocketBuffer == 0 {
		c.SocketBuffer = DefaultSocketBuf
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Endpoint is a UDP socket speaking the wire protocol.
type Endpoint struct {
	cfg    Config
	conn   *net.UDPConn // nil when polled: sock instead
	sock   polledSocket
	sys    sysConn // the socket for batched system calls, per platform
	addr   netip.AddrPort
	reasm  *wire.Reassembler
	out    *outbox   // the messages of several windows sent, for MOREs
	bufs   sync.Pool // *[]byte of cap cfg.Datagram, for encoding
	comb   *combiner // batches concurrent Sends (nil: each sends alone)
	seq    atomic.Uint64
	stamps *antireplay.Stamper // stamps signed datagrams (ReplayMode)
	mode   atomic.Int32        // the ReplayMode in use (FollowMap)
	replay *antireplay.Filter  // checks received stamps; nil without Auth
	stats  counters
	wg     sync.WaitGroup
	closed atomic.Bool

	// handler serves requests (Start); a Poller hands them to it.
	handler Handler

	mu    sync.Mutex // guards calls
	calls map[uint64]*call
	async asyncCalls // the CallManyFunc batches in flight
	rtt   rtts       // round-trip times by peer, for retransmissions
}

// Listen opens the socket. Start begins reading.
func Listen(cfg Config) (*Endpoint, error) {
	cfg = cfg.withDefaults()
	if cfg.Datagram < wire.MinDatagram || cfg.Datagram > wire.MaxDatagram {
		return nil, fmt.Errorf("cannot listen on %s: datagram size %d outside %d…%d", cfg.Addr, cfg.Datagram, wire.MinDatagram, wire.MaxDatagram)
	}
	if cfg.Batch > MaxBatch {
		return nil, fmt.Errorf("cannot listen on %s: batch %d above %d", cfg.Addr, cfg.Batch, MaxBatch)
	}
	if cfg.Polled {
		sock, sys, addr, err := listenPolled(cfg)
		if err != nil {
			return nil, fmt.Errorf("cannot listen on %s: %w", cfg.Addr, err)
		}
		return newEndpoint(cfg, nil, sock, sys, addr), nil
	}
	ua, err := net.ResolveUDPAddr("udp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s: %w", cfg.Addr, err)
	}
	conn, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s: %w", cfg.Addr, err)
	}
	// Best effort: the kernel caps the sizes at net.core.[rw]mem_max.
	_ = conn.SetReadBuffer(cfg.SocketBuffer)
	_ = conn.SetWriteBuffer(cfg.SocketBuffer)
	sys, err := newSysConn(conn)
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("cannot listen on %s: %w", cfg.Addr, err)
	}
	return newEndpoint(cfg, conn, nil, sys, conn.LocalAddr().(*net.UDPAddr).AddrPort()), nil
}

// newEndpoint is an endpoint on conn, or on sock when polled.
func newEndpoint(cfg Config, conn *net.UDPConn, sock polledSocket, sys sysConn, addr netip.AddrPort) *Endpoint {
	e := &Endpoint{
		cfg:   cfg,
		conn:  conn,
		sock:  sock,
		sys:   sys,
		addr:  addr,
		reasm: wire.NewReassembler(cfg.Reassembly),
		out:   newOutbox(cfg.Reassembly.Timeout, DefaultOutboxBytes),
		calls: make(map[uint64]*call),
	}
	e.bufs.New = func() any { b := make([]byte, 0, cfg.Datagram); return &b }
	if cfg.Batch != 1 {
		e.comb = newCombiner(e)
	}
	e.seq.Store(rand.Uint64())
	e.mode.Store(int32(cfg.Replay))
	if cfg.Auth != nil {
		name := cfg.Sender
		if name != "" {
			name = fmt.Sprintf("%s:%d", name, addr.Port())
		}
		now := time.Now()
		e.stamps = antireplay.NewStamper(antireplay.SenderID(name), now)
		rc := cfg.ReplayFilter
		if rc.Start.IsZero() {
			rc.Start = now
		}
		e.replay = antireplay.New(rc)
	}
	return e
}

// Addr is the bound address.
func (e *Endpoint) Addr() netip.AddrPort { return e.addr }

// Datagram is the configured datagram size.
func (e *Endpoint) Datagram() int { return e.cfg.Datagram }

// Start starts the readers, none when Config.Polled; h serves requests
// (nil drops them).
func (e *Endpoint) Start(h Handler) {
	e.handler = h
	if e.cfg.Polled {
		return
	}
	for range e.cfg.Readers {
		e.wg.Add(1)
		go e.read(h)
	}
}

// Close closes the socket, waits for the readers and fails outstanding
// calls with ErrClosed.
func (e *Endpoint) Close() error {
	if e.closed.Swap(true) {
		return nil
	}
	var err error
	if e.sock != nil {
		err = e.sock.close()
	} else {
		err = e.conn.Close()
	}
	e.wg.Wait()
	e.async.closeAll()
	if err != nil {
		return fmt.Errorf("cannot close endpoint %s: %w", e.addr, err)
	}
	return nil
}

// NextSeq returns a fresh sequence number.
func (e *Endpoint) NextSeq() uint64 { return e.seq.Add(1) }

// Send sends m to dst, split into as many datagrams as its value needs.
func (e *Endpoint) Send(dst netip.AddrPort, m *wire.Message) error {
	return e.sendRange(dst, m, 0, e.firstWindow(dst, m))
}

// write sends datagram b to dst with a system call of its own.
func (e *Endpoint) write(dst netip.AddrPort, b []byte) error {
	var err error
	if e.sock != nil {
		err = e.sock.writeTo(b, dst)
	} else {
		_, err = e.conn.WriteToUDPAddrPort(b, dst)
	}
	if err != nil {
		e.stats.sendErrors.Add(1)
		return err
	}
	e.stats.sends.Add(1)
	e.stats.datagramsOut.Add(1)
	e.stats.bytesOut.Add(uint64(len(b)))
	return nil
}

// sendRange sends the fragments of m that start in [from, end).
func (e *Endpoint) sendRange(dst netip.AddrPort, m *wire.Message, from, end int) error {
	bp := e.bufs.Get().(*[]byte)
	defer e.bufs.Put(bp)
	for off := from; ; {
		b, next, err := e.appendDatagram((*bp)[:0], dst, m, off)
		if err != nil {
			return err
		}
		*bp = b
		if e.comb == nil || !e.comb.send(dst, b) {
			if err := e.write(dst, b); err != nil {
				return fmt.Errorf("cannot send %s to %s: %w", m.Op, dst, err)
			}
		}
		if next >= len(m.Value) || next >= end {
			return nil
		}
		off = next
	}
}

func (e *Endpoint) read(h Handler) {
	defer e.wg.Done()
	r := e.newReader()
	rx := &receiver{e: e, h: h, out: r, msg: new(wire.Message)}
	for {
		n, err := r.recv()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			e.cfg.Logger.Debug("cannot read datagram", "addr", e.addr, "err", err)
			continue
		}
		rx.batch(n)
	}
}

// reader is one reader goroutine's socket access: it receives datagrams
// and is the Sender its handler replies through.
type reader interface {
	Sender
	rangeSender
	// recv waits for datagrams and returns how many were received.
	recv() (int, error)
	// datagram is the i-th datagram of the last recv and its unmapped
	// source; the bytes are valid until the next recv.
	datagram(i int) ([]byte, netip.AddrPort)
	// Flush sends the replies queued since the last flush.
	Flush()
}

// singleReader reads and sends one datagram per system call.
type singleReader struct {
	e   *Endpoint
	buf []byte
	n   int
	src netip.AddrPort
}

func newSingleReader(e *Endpoint) *singleReader {
	return &singleReader{e: e, buf: make([]byte, wire.MaxDatagram+1)}
}

func (r *singleReader) recv() (int, error) {
	n, src, err := r.e.conn.ReadFromUDPAddrPort(r.buf)
	if err != nil {
		return 0, err
	}
	r.n, r.src = n, unmapped(src)
	return 1, nil
}

func (r *singleReader) datagram(int) ([]byte, netip.AddrPort) { return r.buf[:r.n], r.src }

func (r *singleReader) Send(dst netip.AddrPort, m *wire.Message) error { return r.e.Send(dst, m) }

func (r *singleReader) sendRange(dst netip.AddrPort, m *wire.Message, from, end int) error {
	return r.e.sendRange(dst, m, from, end)
}

// Flush does nothing: every reply is sent at once.
func (r *singleReader) Flush() {}

// unmapped reports an IPv4 peer of a dual-stack socket as IPv4.
func unmapped(a netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
}

// dispatch hands a complete message that rx received to its call or to
// rx's handler. owned says whether m's bytes are its own (reassembled)
// rather than the read buffer.
func (e *Endpoint) dispatch(rx *receiver, src netip.AddrPort, m *wire.Message, owned bool) {
	if !m.Op.IsReply() {
		if rx.h == nil {
			e.stats.unhandled.Add(1)
			return
		}
		rx.h(rx.out, src, m)
		return
	}
	e.mu.Lock()
	c := e.calls[m.Seq]
	e.mu.Unlock()
	if c == nil || c.op != m.Op || c.dst != src {
		e.stats.unmatched.Add(1)
		return
	}
	if !c.resent.Load() {
		e.rtt.sample(src, rx.clock().Sub(c.sent))
	}
	r := *m
	if !owned {
		r.Key, r.Value = ownedCopy(m.Key, m.Value)
	}
	if c.batch != nil {
		if !c.batch.deliver(c.slot, r) {
			e.stats.unmatched.Add(1) // a duplicate, or too late
		}
		return
	}
	select {
	case c.reply <- r:
	default:
		e.stats.unmatched.Add(1) // a duplicate of a reply already delivered
	}
}

// ownedCopy copies a reply's key and value, which point into the receive
// buffer, into one allocation of their own.
func ownedCopy(key, value []byte) ([]byte, []byte) {
	b := make([]byte, len(key)+len(value))
	n := copy(b, key)
	copy(b[n:], value)
	return b[:n:n], b[n:]
}
