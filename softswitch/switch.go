package softswitch

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	"golang.org/x/net/ipv4"
	"google.golang.org/protobuf/proto"

	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/softswitch/gnmiserver"
	pipelines "github.com/distcache/distcache/stratum_pipelines"
)

// Defaults of Config.
const (
	DefaultBatch = 32
	// queueLen bounds the packet-ins and hot-key reports waiting for the
	// controller; more are dropped and counted, as a CPU port drops.
	queueLen    = 4096
	maxDatagram = 65536
)

// Config configures a software switch.
type Config struct {
	// Addr is the IPv4 address its ports bind.
	Addr netip.Addr
	// BasePort is the coherence port; read port s (the storage shard of
	// global index s) is BasePort + 1 + s.
	BasePort uint16
	// ReadPorts is the number of read ports.
	ReadPorts int
	// Program is the P4 program the switch runs (Programs): Program, the
	// cache switch, when empty, or ClientLeafProgram.
	Program string
	// Batch is the most datagrams one receive takes (DefaultBatch).
	Batch  int
	Logger *slog.Logger
}

// Stats counts what the switch did; every field is updated atomically.
type Stats struct {
	Received     atomic.Uint64 // datagrams received on its ports
	Hits         atomic.Uint64 // GETs answered from the registers
	Refused      atomic.Uint64 // hedged reads (FLAG_CACHE_ONLY) without a valid copy
	Relayed      atomic.Uint64 // misses (and MOREs) sent on to a shim; a client leaf's reads sent on to a cache switch
	Replies      atomic.Uint64 // shim (or, on a client leaf, cache switch) replies relayed back to their clients
	Coherence    atomic.Uint64 // INVALIDATE, UPDATE and FETCH_REPLY handled
	Dropped      atomic.Uint64 // dropped by the pipeline (no route, no relay slot, not addressed)
	Unparsed     atomic.Uint64 // not a DistCache datagram, or too short for its key
	NoEgress     atomic.Uint64 // leaving from an address the switch has no port at
	SendErrors   atomic.Uint64
	PacketIns    atomic.Uint64 // FETCH_REPLYs passed to the controller
	QueueDrops   atomic.Uint64 // packet-ins and hot-key reports the controller did not take in time
	HotKeys      atomic.Uint64 // hot-key reports
	Unconfigured atomic.Uint64 // datagrams received before a pipeline was pushed
	// PipelineInstalls counts the pipelines installed: each started the
	// switch empty (a RECONCILE_AND_COMMIT of the running P4Info is not
	// one).
	PipelineInstalls atomic.Uint64
}

// control is a program's ingress control over a configured state.
type control interface {
	// apply runs the P4 control on p at ingress time now (microseconds);
	// hot keys are reported through report.
	apply(p *packet, now uint64, report func(HotKey))
	// process runs a datagram that arrived on the switch's port p.dst
	// through the control as the software switch runs it on its
	// sockets, dropping what it cannot send.
	process(p *packet, now uint64, report func(HotKey))
}

// Switch is a software switch running the cache switch or the client
// leaf program.
type Switch struct {
	cfg   Config
	log   *slog.Logger
	start time.Time
	conns []*net.UDPConn
	pcs   []*ipv4.PacketConn

	// mu is the pipeline lock: it guards st and ctl (tables, registers,
	// counters), held for a whole receive batch as a pipeline processes
	// packets in order, and for each P4Runtime request.
	mu  sync.Mutex
	st  *state
	ctl control

	packetIns chan []byte
	hotKeys   chan HotKey
	report    func(HotKey) // reportHotKey, bound once: a method value made per packet would escape to the heap
	stats     Stats
	wg        sync.WaitGroup
	closed    atomic.Bool
}

// New binds the switch's ports and starts serving them; until a pipeline
// is pushed (SetPipeline) it drops every datagram.
func New(cfg Config) (*Switch, error) {
	if !cfg.Addr.Is4() {
		return nil, fmt.Errorf("cannot start the software switch: address %s is not IPv4", cfg.Addr)
	}
	if cfg.ReadPorts < 1 || int(cfg.BasePort)+cfg.ReadPorts > 65535 {
		return nil, fmt.Errorf("cannot start the software switch: ports %d…%d", cfg.BasePort, int(cfg.BasePort)+cfg.ReadPorts)
	}
	if cfg.Program == "" {
		cfg.Program = Program
	}
	if cfg.Program != Program && cfg.Program != ClientLeafProgram {
		return nil, fmt.Errorf("cannot start the software switch: it runs %s or %s, not %s", Program, ClientLeafProgram, cfg.Program)
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Switch{cfg: cfg, log: cfg.Logger, start: time.Now(),
		packetIns: make(chan []byte, queueLen), hotKeys: make(chan HotKey, queueLen)}
	s.report = s.reportHotKey
	for i := 0; i <= cfg.ReadPorts; i++ {
		addr := netip.AddrPortFrom(cfg.Addr, cfg.BasePort+uint16(i))
		conn, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(addr))
		if err != nil {
			_ = s.closeConns()
			return nil, fmt.Errorf("cannot start the software switch: cannot bind %s: %w", addr, err)
		}
		s.conns = append(s.conns, conn)
		s.pcs = append(s.pcs, ipv4.NewPacketConn(conn))
	}
	for i := range s.conns {
		s.wg.Add(1)
		go s.serve(i)
	}
	return s, nil
}

// Program is the P4 program the switch runs.
func (s *Switch) Program() string { return s.cfg.Program }

// Addr is the switch's coherence address (its member address).
func (s *Switch) Addr() netip.AddrPort { return netip.AddrPortFrom(s.cfg.Addr, s.cfg.BasePort) }

// Ports names the switch's ports — "coherence" (ifindex 1), then
// "read-<s>" (ifindex s+2) for the read port of shard s — and says
// whether each is up (bound and served).
func (s *Switch) Ports() []gnmiserver.Port {
	up := !s.closed.Load()
	ports := []gnmiserver.Port{{Name: "coherence", ID: 1, Up: up}}
	for i := range s.cfg.ReadPorts {
		ports = append(ports, gnmiserver.Port{Name: fmt.Sprintf("read-%d", i), ID: uint64(i + 2), Up: up})
	}
	return ports
}

// Stats returns the switch's counters.
func (s *Switch) Stats() *Stats { return &s.stats }

// Close stops serving and closes the ports.
func (s *Switch) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	err := s.closeConns()
	s.wg.Wait()
	return err
}

func (s *Switch) closeConns() error {
	var errs []error
	for _, c := range s.conns {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// SetPipeline installs a new pipeline: the P4Info must be the program's
// (Config.Program). Every table starts empty and every register zero, as
// after a switch restart.
func (s *Switch) SetPipeline(info *p4configv1.P4Info, cookie uint64) error {
	st, err := newState(s.cfg.Program, info, cookie)
	if err != nil {
		return err
	}
	var ctl control
	if s.cfg.Program == ClientLeafProgram {
		if ctl, err = newClientLeaf(st); err != nil {
			return err
		}
	} else {
		ctl = newCache(st)
	}
	s.mu.Lock()
	s.st, s.ctl = st, ctl
	s.mu.Unlock()
	s.stats.PipelineInstalls.Add(1)
	s.log.Info("forwarding pipeline installed", "program", s.cfg.Program, "cookie", cookie)
	return nil
}

// Verify checks info as SetPipeline would, without installing it.
func (s *Switch) Verify(info *p4configv1.P4Info) error { return CheckP4Info(s.cfg.Program, info) }

// Reconcile installs info keeping the tables and registers when the
// switch runs the same P4Info already (only the cookie changes), as
// P4Runtime's RECONCILE_AND_COMMIT asks.
func (s *Switch) Reconcile(info *p4configv1.P4Info, cookie uint64) error {
	s.mu.Lock()
	if s.st != nil && proto.Equal(s.st.info, info) {
		s.st.cookie = cookie
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	return s.SetPipeline(info, cookie)
}

// PacketIns are the frames the pipeline sends the controller (the
// FETCH_REPLYs it applied), for the P4Runtime stream to deliver.
func (s *Switch) PacketIns() <-chan []byte { return s.packetIns }

// HotKeys are the pipeline's hot-key digests.
func (s *Switch) HotKeys() <-chan HotKey { return s.hotKeys }

// Pipeline returns the installed P4Info and cookie, if any.
func (s *Switch) Pipeline() (*p4configv1.P4Info, uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st == nil {
		return nil, 0, false
	}
	return s.st.info, s.st.cookie, true
}

// now is the ingress timestamp: microseconds since the switch started.
func (s *Switch) now() uint64 { return uint64(time.Since(s.start) / time.Microsecond) }

// serve receives batches on port i and runs each through the pipeline.
func (s *Switch) serve(i int) {
	defer s.wg.Done()
	local := netip.AddrPortFrom(s.cfg.Addr, s.cfg.BasePort+uint16(i))
	in := make([]ipv4.Message, s.cfg.Batch)
	for j := range in {
		in[j].Buffers = [][]byte{make([]byte, maxDatagram)}
	}
	pkts := make([]packet, s.cfg.Batch)
	out := make([][]ipv4.Message, len(s.conns))
	eg := newEgressSlots(s.cfg.Batch)
	for {
		n, err := s.pcs[i].ReadBatch(in, 0)
		if err != nil {
			if s.closed.Load() {
				return
			}
			s.log.Warn("cannot receive", "port", local, "err", err)
			continue
		}
		s.stats.Received.Add(uint64(n))
		s.process(local, in[:n], pkts[:n])
		s.egress(pkts[:n], out, eg)
	}
}

// process runs a received batch through the pipeline under the lock.
func (s *Switch) process(local netip.AddrPort, in []ipv4.Message, pkts []packet) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for j := range in {
		p := &pkts[j]
		*p = packet{dst: local, b: in[j].Buffers[0][:in[j].N]}
		if ua, ok := in[j].Addr.(*net.UDPAddr); ok {
			p.src = ua.AddrPort()
			p.src = netip.AddrPortFrom(p.src.Addr().Unmap(), p.src.Port())
		}
		if s.ctl == nil {
			s.stats.Unconfigured.Add(1)
			p.drop = true
			continue
		}
		p.parse()
		if !p.dc {
			s.stats.Unparsed.Add(1)
			p.drop = true
			continue
		}
		s.ctl.process(p, now, s.report)
	}
}

func (s *Switch) reportHotKey(r HotKey) {
	s.stats.HotKeys.Add(1)
	select {
	case s.hotKeys <- r:
	default:
		s.stats.QueueDrops.Add(1)
	}
}

// egressSlots are a reader's reusable destination addresses and buffer
// lists, one per packet of a batch, so that sending allocates nothing.
type egressSlots struct {
	addrs []net.UDPAddr
	bufs  [][][]byte
}

func newEgressSlots(n int) *egressSlots {
	e := &egressSlots{addrs: make([]net.UDPAddr, n), bufs: make([][][]byte, n)}
	for i := range e.addrs {
		e.addrs[i].IP = make(net.IP, 4)
		e.bufs[i] = make([][]byte, 1)
	}
	return e
}

// egress sends the batch's packets from the ports they leave by, one
// sendmmsg per port, and hands FETCH_REPLYs to the controller.
func (s *Switch) egress(pkts []packet, out [][]ipv4.Message, eg *egressSlots) {
	for k := range out {
		out[k] = out[k][:0]
	}
	for j := range pkts {
		p := &pkts[j]
		switch {
		case p.drop:
			s.stats.Dropped.Add(1)
			continue
		case p.toCPU:
			s.packetIn(p)
			continue
		}
		k, ok := s.port(p.src)
		if !ok {
			s.stats.NoEgress.Add(1)
			continue
		}
		s.countEgress(p)
		a := &eg.addrs[j]
		a4 := p.dst.Addr().As4()
		copy(a.IP, a4[:])
		a.Port = int(p.dst.Port())
		eg.bufs[j][0] = p.b
		out[k] = append(out[k], ipv4.Message{Buffers: eg.bufs[j], Addr: a})
	}
	for k, msgs := range out {
		for len(msgs) > 0 {
			n, err := s.pcs[k].WriteBatch(msgs, 0)
			if err != nil {
				s.stats.SendErrors.Add(uint64(len(msgs)))
				break
			}
			msgs = msgs[n:]
		}
	}
}

func (s *Switch) countEgress(p *packet) {
	switch {
	case p.role == roleCoherence:
		s.stats.Coherence.Add(1)
	case p.reply && p.flags()&byte(wire.FlagHit) != 0:
		s.stats.Hits.Add(1)
	case p.reply:
		s.stats.Refused.Add(1)
	case p.op() == wire.OpGetReply:
		s.stats.Replies.Add(1)
	default:
		s.stats.Relayed.Add(1)
	}
}

// port is the index of the port a packet from src leaves by.
func (s *Switch) port(src netip.AddrPort) (int, bool) {
	if src.Addr() != s.cfg.Addr || src.Port() < s.cfg.BasePort || int(src.Port()-s.cfg.BasePort) >= len(s.conns) {
		return 0, false
	}
	return int(src.Port() - s.cfg.BasePort), true
}

func (s *Switch) packetIn(p *packet) {
	s.stats.Coherence.Add(1)
	frame := pipelines.AppendFrame(nil, p.src, p.dst, p.b)
	select {
	case s.packetIns <- frame:
		s.stats.PacketIns.Add(1)
	default:
		s.stats.QueueDrops.Add(1)
	}
}

// PacketOut sends a controller's frame (Ethernet, IPv4, UDP) from the
// switch port its source names, as the program forwards a packet-out.
func (s *Switch) PacketOut(frame []byte) error {
	src, dst, payload, err := pipelines.ParseFrame(frame)
	if err != nil {
		return err
	}
	k, ok := s.port(src)
	if !ok {
		return fmt.Errorf("cannot send packet-out: the switch has no port at %s", src)
	}
	if _, err := s.conns[k].WriteToUDPAddrPort(payload, dst); err != nil {
		return fmt.Errorf("cannot send packet-out to %s: %w", dst, err)
	}
	return nil
}
