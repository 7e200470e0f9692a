package client

import (
	"context"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/routing"
)

// testRetransmit is the transport retransmit interval used by the tests.
const testRetransmit = 10 * time.Millisecond

// fakeNode is a TEST stand-in for a cache node: it answers GET with a
// configurable status, value, hit flag and load telemetry, or stays silent
// to simulate a dead node. It is not the cache node: the real one is
// dataplane/cachenode, tested together with this client end-to-end
// elsewhere. It records the distinct sequence numbers it received, so
// retransmissions of one request count once.
type fakeNode struct {
	id   uint32
	name string
	ep   *transport.Endpoint

	mu sync.Mutex // guards b and seqs
	b  nodeBehaviour
	// seqs holds the sequence numbers of the GETs received, flags the
	// flags of the last.
	seqs  map[uint64]bool
	flags wire.Flag
}

// nodeBehaviour is how a fakeNode answers.
type nodeBehaviour struct {
	status    wire.Status
	value     []byte
	hit       bool
	telemetry bool
	load      uint32
	silent    bool
	mapVer    uint64        // the map version stamped into replies
	hold      chan struct{} // when set, replies wait until it is closed
}

type nodeOpt func(*nodeBehaviour)

func nodeStatus(s wire.Status) nodeOpt { return func(b *nodeBehaviour) { b.status = s } }
func nodeLoad(l uint32) nodeOpt        { return func(b *nodeBehaviour) { b.telemetry, b.load = true, l } }
func nodeSilent(s bool) nodeOpt        { return func(b *nodeBehaviour) { b.silent = s } }
func nodeHit(h bool) nodeOpt           { return func(b *nodeBehaviour) { b.hit = h } }
func nodeMapVersion(v uint64) nodeOpt  { return func(b *nodeBehaviour) { b.mapVer = v } }
func nodeHold(c chan struct{}) nodeOpt { return func(b *nodeBehaviour) { b.hold = c } }

func startFakeNode(t *testing.T, name string, id uint32) *fakeNode {
	t.Helper()
	ep, err := transport.Listen(transport.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatalf("cannot start fake node: %v", err)
	}
	n := &fakeNode{id: id, name: name, ep: ep, seqs: map[uint64]bool{},
		b: nodeBehaviour{value: []byte("cached:" + name), hit: true}}
	ep.Start(n.serve)
	t.Cleanup(func() { _ = ep.Close() })
	return n
}

// set changes how the node answers from now on.
func (n *fakeNode) set(opts ...nodeOpt) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, o := range opts {
		o(&n.b)
	}
}

// lastFlags is the flags of the last GET received.
func (n *fakeNode) lastFlags() wire.Flag {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.flags
}

// requests is the number of distinct GETs received.
func (n *fakeNode) requests() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.seqs)
}

func (n *fakeNode) serve(out transport.Sender, src netip.AddrPort, req *wire.Message) {
	if req.Op != wire.OpGet {
		return
	}
	n.mu.Lock()
	n.seqs[req.Seq] = true
	n.flags = req.Flags
	b := n.b
	n.mu.Unlock()
	if b.silent {
		return
	}
	r := wire.Message{Header: wire.Header{Op: wire.OpGetReply, Seq: req.Seq, Status: b.status, ValueVersion: 7, MapVersion: b.mapVer}, Key: req.Key}
	if req.Has(wire.FlagCacheOnly) && !b.hit {
		r.Status = wire.StatusUnavailable // a hedge finds no copy
	}
	if req.Has(wire.FlagDirect) && !b.hit {
		r.Status, r.Flags = wire.StatusUnavailable, wire.FlagDirect // the reader reads storage itself
	}
	if b.status == wire.StatusOK {
		r.Value = b.value
		if b.hit {
			r.Flags |= wire.FlagHit
		}
	}
	if b.telemetry {
		r.Flags |= wire.FlagTelemetry
		r.NodeID, r.Load = n.id, b.load
	}
	if b.hold != nil {
		r.Key = append([]byte(nil), req.Key...) // req aliases the read buffer
		go func() {
			<-b.hold
			_ = n.ep.Send(src, &r)
		}()
		return
	}
	_ = out.Send(src, &r) // Send copies Key (aliasing the read buffer) before returning
}

// fakeShim is a TEST stand-in for a storage shim: it answers GET, PUT and
// DEL from an in-memory map, deduplicates requests by sequence number like
// the real shim, and can drop datagrams, answer COHERENCE_TIMEOUT or stay
// silent. It runs no coherence protocol: the real shim is dataplane/shim,
// tested together with this client and the cache nodes end-to-end
// elsewhere.
type fakeShim struct {
	name string
	ep   *transport.Endpoint

	mu   sync.Mutex // guards everything below
	data map[string][]byte
	log  []shimRequest
	// done maps the sequence number of an answered request to its reply
	// status, to answer a retransmission alike.
	done map[uint64]wire.Status
	// dropWrites is the number of PUT/DEL datagrams still to drop.
	dropWrites int
	// coherenceFails is the number of distinct writes still to answer
	// COHERENCE_TIMEOUT.
	coherenceFails int
	// unavailableGets is the number of distinct GETs still to answer
	// UNAVAILABLE (Redis down behind the shim).
	unavailableGets int
	silent          bool
}

// shimRequest is one datagram a fakeShim received.
type shimRequest struct {
	op      wire.Op
	seq     uint64
	key     string
	flags   wire.Flag
	dropped bool
}

func startFakeShim(t *testing.T, name string) *fakeShim {
	t.Helper()
	ep, err := transport.Listen(transport.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatalf("cannot start fake shim: %v", err)
	}
	s := &fakeShim{name: name, ep: ep, data: map[string][]byte{}, done: map[uint64]wire.Status{}}
	ep.Start(s.serve)
	t.Cleanup(func() { _ = ep.Close() })
	return s
}

func (s *fakeShim) serve(out transport.Sender, src netip.AddrPort, req *wire.Message) {
	key := string(req.Key)
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := shimRequest{op: req.Op, seq: req.Seq, key: key, flags: req.Flags}
	write := req.Op == wire.OpPut || req.Op == wire.OpDel
	if s.silent || (write && s.dropWrites > 0) {
		if !s.silent {
			s.dropWrites--
		}
		rec.dropped = true
		s.log = append(s.log, rec)
		return
	}
	s.log = append(s.log, rec)
	r := wire.Message{Header: wire.Header{Op: req.Op.Reply(), Seq: req.Seq}, Key: req.Key}
	switch st, seen := s.done[req.Seq]; {
	case seen:
		r.Status = st
	case req.Op == wire.OpGet && s.unavailableGets > 0:
		s.unavailableGets--
		r.Status = wire.StatusUnavailable
	case req.Op == wire.OpGet:
		v, ok := s.data[key]
		if !ok {
			r.Status = wire.StatusNotFound
		}
		r.Value, r.ValueVersion = v, 3
	case write && s.coherenceFails > 0:
		s.coherenceFails--
		r.Status = wire.StatusCoherence
	case req.Op == wire.OpPut:
		s.data[key] = append([]byte(nil), req.Value...)
	case req.Op == wire.OpDel:
		delete(s.data, key)
	case req.Op == wire.OpRMW: // a result, not applied: tests only count RMWs
		r.Value = []byte("42")
	default:
		return
	}
	if write || r.Status == wire.StatusUnavailable {
		s.done[req.Seq] = r.Status // a retransmission gets the same answer and uses up nothing
	}
	_ = out.Send(src, &r)
}

// do runs f under the shim's lock (to configure it or read its state).
func (s *fakeShim) do(f func(s *fakeShim)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

// requests returns a copy of the datagrams received.
func (s *fakeShim) requests() []shimRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]shimRequest(nil), s.log...)
}

// distinctSeqs counts the distinct sequence numbers among rs.
func distinctSeqs(rs []shimRequest) int {
	seen := map[uint64]bool{}
	for _, r := range rs {
		seen[r.seq] = true
	}
	return len(seen)
}

// clusterSpec shapes a test cluster of fake nodes and shims.
type clusterSpec struct {
	layers, nodesPerLayer int
	racks, shardsPerRack  int
	capacity              map[int]float64 // by layer
}

type clusterOpt func(*clusterSpec)

func withLayers(n int) clusterOpt        { return func(s *clusterSpec) { s.layers = n } }
func withNodesPerLayer(n int) clusterOpt { return func(s *clusterSpec) { s.nodesPerLayer = n } }
func withShards(racks, perRack int) clusterOpt {
	return func(s *clusterSpec) { s.racks, s.shardsPerRack = racks, perRack }
}
func withCapacity(layer int, c float64) clusterOpt {
	return func(s *clusterSpec) { s.capacity[layer] = c }
}

// cluster is a partition map whose members and shards are fakes bound on
// 127.0.0.1.
type cluster struct {
	m     *partmap.Map
	p     *partmap.Placement
	nodes [][]*fakeNode // [layer][member]
	shims [][]*fakeShim // [rack][shard]
}

// newCluster starts the fakes (by default two layers of one node each and
// one shim) and compiles their map.
func newCluster(t *testing.T, opts ...clusterOpt) *cluster {
	t.Helper()
	spec := clusterSpec{layers: 2, nodesPerLayer: 1, racks: 1, shardsPerRack: 1, capacity: map[int]float64{}}
	for _, o := range opts {
		o(&spec)
	}
	ps := partmap.Spec{Cluster: "test", Racks: spec.racks, ShardsPerRack: spec.shardsPerRack}
	for l := range spec.layers {
		ps.Layers = append(ps.Layers, partmap.LayerSpec{
			Name: "l" + string(rune('0'+l)), Nodes: spec.nodesPerLayer, Capacity: spec.capacity[l]})
	}
	m, err := partmap.Build(ps, nil)
	if err != nil {
		t.Fatalf("cannot build map: %v", err)
	}
	c := &cluster{m: m}
	for l := range m.Layers {
		var row []*fakeNode
		for i := range m.Layers[l].Members {
			mb := &m.Layers[l].Members[i]
			n := startFakeNode(t, mb.Name, mb.ID)
			mb.Address = n.ep.Addr().String()
			row = append(row, n)
		}
		c.nodes = append(c.nodes, row)
	}
	for r := range m.Storage.Racks {
		var row []*fakeShim
		for i := range m.Storage.Racks[r].Shards {
			sh := &m.Storage.Racks[r].Shards[i]
			s := startFakeShim(t, sh.Name)
			sh.Address = s.ep.Addr().String()
			row = append(row, s)
		}
		c.shims = append(c.shims, row)
	}
	c.p = compile(t, m)
	return c
}

func compile(t *testing.T, m *partmap.Map) *partmap.Placement {
	t.Helper()
	p, err := partmap.Compile(m)
	if err != nil {
		t.Fatalf("cannot compile map: %v", err)
	}
	return p
}

// shimFor returns the fake shim storing key.
func (c *cluster) shimFor(key string) *fakeShim {
	r, s := c.p.Shard(key)
	return c.shims[r][s]
}

// store puts key = value into the shim that owns key.
func (c *cluster) store(key, value string) {
	c.shimFor(key).do(func(s *fakeShim) { s.data[key] = []byte(value) })
}

// withFailed returns the placement with member (layer, i) in state.
func (c *cluster) withState(t *testing.T, layer, i int, state partmap.MemberState) *partmap.Placement {
	t.Helper()
	next, _, err := c.m.WithState(c.m.Layers[layer].Members[i].Name, state)
	if err != nil {
		t.Fatalf("cannot change member state: %v", err)
	}
	c.m = next
	c.p = compile(t, next)
	return c.p
}

type clientOpt func(*Config)

func withAttempts(n int) clientOpt                     { return func(c *Config) { c.Attempts = n } }
func withRegisterer(r prometheus.Registerer) clientOpt { return func(c *Config) { c.Registerer = r } }
func withAttemptTimeout(d time.Duration) clientOpt     { return func(c *Config) { c.AttemptTimeout = d } }
func withFailBackoff(d time.Duration) clientOpt        { return func(c *Config) { c.FailBackoff = d } }

// newTestClient starts a client for p with test defaults: loads never age
// and failed nodes stay skipped for an hour (no test depends on timing),
// short retransmissions, and the default attempt timeout, which only silent
// fakes reach (a live fake on loopback answers far sooner).
func newTestClient(t *testing.T, p *partmap.Placement, opts ...clientOpt) *Client {
	t.Helper()
	cfg := Config{
		Transport:      transport.Config{Retransmit: testRetransmit},
		Aging:          routing.AgingConfig{StaleAfter: int64(24 * time.Hour), HalfLife: int64(time.Hour)},
		AttemptTimeout: DefaultAttemptTimeout,
		FailBackoff:    time.Hour,
		Seed:           1,
	}
	for _, o := range opts {
		o(&cfg)
	}
	c, err := New(cfg, p)
	if err != nil {
		t.Fatalf("cannot create client: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// fakeClock replaces c's clock with one the test moves.
func fakeClock(c *Client) *atomic.Int64 {
	var now atomic.Int64
	now.Store(1)
	c.now = now.Load
	return &now
}

// waitFor polls cond until it holds, failing the test after a generous
// deadline (the bound, not a timing assumption).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
	}
}

// testCtx is a context bounded generously for one test operation.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// noDeadline is a context without a deadline: a read under it stops after
// Config.Attempts requests, not at a deadline.
func noDeadline(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx
}

func withHedgeDelay(d time.Duration) clientOpt { return func(c *Config) { c.HedgeDelay = d } }
