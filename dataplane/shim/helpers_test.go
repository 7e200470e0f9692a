package shim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/internal/testing/redistest"
	"github.com/distcache/distcache/placement/partmap"
)

// patience bounds every wait in these tests. It is a deadline against
// hangs, never a threshold a passing test gets near.
const patience = 30 * time.Second

// nodeEvent is an INVALIDATE or UPDATE a recordingNode received.
type nodeEvent struct {
	node    string
	op      wire.Op
	seq     uint64
	key     string
	version uint64
	status  wire.Status
	value   []byte
	redis   string // what a hook read from Redis before the ack, if it did
	held    bool   // an INVALIDATE of a key the node holds: acknowledged with FlagHit
	epoch   uint64 // the shim's epoch for the node (FlagEpoch), 0 without
}

// recordingNode plays a cache node for the shim's tests: a transport
// endpoint that records the INVALIDATE and UPDATE requests it receives and
// acknowledges them with StatusOK, after running an optional hook that may
// inspect Redis or block on a channel. A silent node records but never
// acknowledges. It holds no copies unless told to (setHolds): the
// acknowledgement of an INVALIDATE of a held key carries FlagHit, as a
// real node's does. The real cache node, which applies these requests to
// its store, is in dataplane/cachenode.
type recordingNode struct {
	name string
	ep   *transport.Endpoint
	wg   sync.WaitGroup // hook goroutines

	mu      sync.Mutex // guards everything below
	events  []nodeEvent
	acked   map[uint64]bool // by seq: true once acknowledged, false while the hook runs
	hooks   map[wire.Op]func(*nodeEvent)
	holds   map[string]bool // keys whose INVALIDATE is acknowledged with FlagHit
	silent  bool
	flushes bool // FLUSH is acknowledged (and counted in flushed); else ignored, as an older node does
	flushed int
	changed chan struct{} // closed and replaced when events grows
}

func newRecordingNode(t *testing.T, name string) *recordingNode {
	t.Helper()
	ep, err := transport.Listen(transport.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	n := &recordingNode{name: name, ep: ep, acked: map[uint64]bool{}, hooks: map[wire.Op]func(*nodeEvent){},
		holds: map[string]bool{}, changed: make(chan struct{})}
	ep.Start(n.handle)
	t.Cleanup(func() {
		_ = ep.Close()
		n.wg.Wait()
	})
	return n
}

// setHook runs f on every later request of op before it is recorded and
// acknowledged, on the request's own goroutine; f may block.
func (n *recordingNode) setHook(op wire.Op, f func(*nodeEvent)) {
	n.mu.Lock()
	n.hooks[op] = f
	n.mu.Unlock()
}

// setHolds makes the node claim (v true) or deny a copy of key in its
// acknowledgements of later INVALIDATEs.
func (n *recordingNode) setHolds(key string, v bool) {
	n.mu.Lock()
	n.holds[key] = v
	n.mu.Unlock()
}

// setSilent makes the node record later requests without acknowledging
// them (v true), or acknowledge again.
func (n *recordingNode) setSilent(v bool) {
	n.mu.Lock()
	n.silent = v
	n.mu.Unlock()
}

// setFlushes makes the node acknowledge later FLUSHes (v true), as a
// node that knows them does, or ignore them.
func (n *recordingNode) setFlushes(v bool) {
	n.mu.Lock()
	n.flushes = v
	n.mu.Unlock()
}

func (n *recordingNode) handle(out transport.Sender, src netip.AddrPort, req *wire.Message) {
	if req.Op == wire.OpFlush {
		n.mu.Lock()
		ok := n.flushes
		if ok {
			n.flushed++
		}
		n.mu.Unlock()
		if ok {
			_ = out.Send(src, &wire.Message{Header: wire.Header{Op: wire.OpFlushAck, Seq: req.Seq}, Key: req.Key})
		}
		return
	}
	if req.Op != wire.OpInvalidate && req.Op != wire.OpUpdate {
		return
	}
	ev := nodeEvent{node: n.name, op: req.Op, seq: req.Seq, key: string(req.Key), version: req.ValueVersion, status: req.Status,
		value: bytes.Clone(req.Value), epoch: req.Epoch()}
	n.mu.Lock()
	acked, seen := n.acked[req.Seq]
	hook, quiet := n.hooks[req.Op], n.silent
	ev.held = req.Op == wire.OpInvalidate && n.holds[ev.key]
	if !seen {
		n.acked[req.Seq] = false
	}
	n.mu.Unlock()
	if seen { // a retransmit: answer again if done, else the ack will come
		if acked && !quiet {
			n.ack(src, &ev)
		}
		return
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if hook != nil {
			hook(&ev)
		}
		n.mu.Lock()
		n.events = append(n.events, ev)
		n.acked[ev.seq] = true
		close(n.changed)
		n.changed = make(chan struct{})
		n.mu.Unlock()
		if !quiet {
			n.ack(src, &ev)
		}
	}()
}

func (n *recordingNode) ack(dst netip.AddrPort, ev *nodeEvent) {
	m := wire.Message{Header: wire.Header{Op: ev.op.Reply(), Seq: ev.seq, Status: wire.StatusOK}, Key: []byte(ev.key)}
	if ev.held {
		m.Flags |= wire.FlagHit
	}
	_ = n.ep.Send(dst, &m)
}

// recorded returns the events recorded so far that match op and key.
func (n *recordingNode) recorded(op wire.Op, key string) []nodeEvent {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []nodeEvent
	for _, ev := range n.events {
		if ev.op == op && ev.key == key {
			out = append(out, ev)
		}
	}
	return out
}

// find returns the recorded event of op, key and version.
func (n *recordingNode) find(op wire.Op, key string, version uint64) (nodeEvent, bool) {
	for _, ev := range n.recorded(op, key) {
		if ev.version == version {
			return ev, true
		}
	}
	return nodeEvent{}, false
}

// waitFor waits until the node has recorded op for key at version.
func (n *recordingNode) waitFor(t *testing.T, op wire.Op, key string, version uint64) nodeEvent {
	t.Helper()
	deadline := time.NewTimer(patience)
	defer deadline.Stop()
	for {
		if ev, ok := n.find(op, key, version); ok {
			return ev
		}
		n.mu.Lock()
		ch := n.changed
		n.mu.Unlock()
		if ev, ok := n.find(op, key, version); ok {
			return ev
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("node %s: no %s of %q at version %d", n.name, op, key, version)
		}
	}
}

// envConfig configures a test environment.
type envConfig struct {
	shards int // shards in the single storage rack
	layers []partmap.LayerSpec
	redis  []redistest.Option
	shim   []func(*Config)
	hooks  []func(*Shim) // applied after New, before Start
	// addrs are members served by something other than a recordingNode
	// (a real cache node), by member name.
	addrs map[string]netip.AddrPort
	// noStart leaves starting the shim to the test.
	noStart bool
}

// envOption configures newEnv.
type envOption func(*envConfig)

// withShards gives the storage rack n shards; the shim serves shard 0.
func withShards(n int) envOption { return func(c *envConfig) { c.shards = n } }

// withRedis passes options to redistest.Start.
func withRedis(opts ...redistest.Option) envOption {
	return func(c *envConfig) { c.redis = append(c.redis, opts...) }
}

// withMemberAddress gives member name the address addr (a real cache node
// the test runs) instead of a recordingNode.
func withMemberAddress(name string, addr netip.AddrPort) envOption {
	return func(c *envConfig) {
		if c.addrs == nil {
			c.addrs = map[string]netip.AddrPort{}
		}
		c.addrs[name] = addr
	}
}

// withShimHook changes the shim after New, before Start (its test seams).
func withShimHook(f func(*Shim)) envOption {
	return func(c *envConfig) { c.hooks = append(c.hooks, f) }
}

// withoutStart leaves the shim unstarted (its map set): the test starts it.
func withoutStart() envOption { return func(c *envConfig) { c.noStart = true } }

// withConfig edits the shim's Config before New.
func withConfig(f func(*Config)) envOption {
	return func(c *envConfig) { c.shim = append(c.shim, f) }
}

// env is a shim in front of a real redis-server, with a recordingNode for
// every cache member of a two-layer map and a client endpoint.
type env struct {
	t      *testing.T
	redis  *redistest.Server
	rdb    *redis.Client // the test's own Redis client
	shim   *Shim
	cfg    Config // the shim's
	reg    *prometheus.Registry
	m      *partmap.Map
	place  *partmap.Placement
	nodes  map[string]*recordingNode // by member name; not the members of withMemberAddress
	client *transport.Endpoint
}

const testCluster = "test"

// testLease is the serving lease of test shims.
const testLease = 10 * time.Millisecond

func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	c := envConfig{shards: 1, layers: []partmap.LayerSpec{{Name: "upper", Nodes: 3}, {Name: "lower", Nodes: 2}}}
	for _, o := range opts {
		o(&c)
	}
	e := &env{t: t, redis: redistest.Start(t, c.redis...), reg: prometheus.NewRegistry(), nodes: map[string]*recordingNode{}}
	e.rdb = redis.NewClient(&redis.Options{Addr: e.redis.Addr()})
	t.Cleanup(func() { _ = e.rdb.Close() })

	cfg := Config{
		Shard:      partmap.ShardName(testCluster, 0, 0),
		Transport:  transport.Config{Addr: "127.0.0.1:0"},
		Redis:      &redis.Options{Addr: e.redis.Addr()},
		Registerer: e.reg,
		// A short serving lease: the first write waits it out, and owners
		// that leave a key are released after it (tests that depend on the
		// release set their own).
		Lease: testLease,
	}
	for _, f := range c.shim {
		f(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.shim, e.cfg = s, cfg
	t.Cleanup(func() { _ = s.Close() })
	for _, h := range c.hooks {
		h(s)
	}

	m, err := partmap.Build(partmap.Spec{Cluster: testCluster, Racks: 1, ShardsPerRack: c.shards, Layers: c.layers}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for l := range m.Layers {
		for i := range m.Layers[l].Members {
			mb := &m.Layers[l].Members[i]
			if a, ok := c.addrs[mb.Name]; ok {
				mb.Address = a.String()
				continue
			}
			n := newRecordingNode(t, mb.Name)
			e.nodes[mb.Name] = n
			mb.Address = n.ep.Addr().String()
		}
	}
	m.Storage.Racks[0].Shards[0].Address = s.Addr().String()
	e.setMap(m)
	if !c.noStart {
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
	}

	e.client, err = transport.Listen(transport.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	e.client.Start(nil)
	t.Cleanup(func() { _ = e.client.Close() })
	return e
}

// restart closes the shim and starts a new one with the same
// configuration (a new port, a registry of its own) on the same Redis and
// map, as a supervisor restarts a shim that died.
func (e *env) restart() {
	e.t.Helper()
	if err := e.shim.Close(); err != nil {
		e.t.Fatal(err)
	}
	cfg := e.cfg
	cfg.Registerer = prometheus.NewRegistry()
	s, err := New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = s.Close() })
	e.shim = s
	e.m.Storage.Racks[0].Shards[0].Address = s.Addr().String()
	e.setMap(e.m)
	if err := s.Start(); err != nil {
		e.t.Fatal(err)
	}
}

// setMap compiles m and installs it in the shim.
func (e *env) setMap(m *partmap.Map) {
	e.t.Helper()
	p, err := partmap.Compile(m)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.shim.SetMap(p); err != nil {
		e.t.Fatal(err)
	}
	e.m, e.place = m, p
}

// key returns a key stored on shard of the rack, distinct per prefix.
func (e *env) key(shard int, prefix string) string {
	e.t.Helper()
	for i := range 10000 {
		k := fmt.Sprintf("%s-%d", prefix, i)
		if _, s := e.place.Shard(k); s == shard {
			return k
		}
	}
	e.t.Fatalf("no key on shard %d", shard)
	return ""
}

// owners returns key's owner in every layer under the current map.
func (e *env) owners(key string) []*recordingNode {
	var out []*recordingNode
	for _, c := range e.place.Candidates(key, nil) {
		out = append(out, e.nodes[e.m.Layers[c.Layer].Members[c.Member].Name])
	}
	return out
}

// callFrom sends a request from ep to the shim and returns the reply.
func (e *env) callFrom(ep *transport.Endpoint, op wire.Op, key string, value []byte) wire.Message {
	e.t.Helper()
	reply, err := e.tryCall(ep, op, key, value)
	if err != nil {
		e.t.Fatal(err)
	}
	return reply
}

// callFromWith sends m from ep to the shim and returns the reply.
func (e *env) callFromWith(ep *transport.Endpoint, m wire.Message) wire.Message {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	reply, err := ep.Call(ctx, e.shim.Addr(), &m)
	if err != nil {
		e.t.Fatal(err)
	}
	return reply
}

// tryCall is callFrom for goroutines other than the test's.
func (e *env) tryCall(ep *transport.Endpoint, op wire.Op, key string, value []byte) (wire.Message, error) {
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	m := wire.Message{Header: wire.Header{Op: op}, Key: []byte(key), Value: value}
	return ep.Call(ctx, e.shim.Addr(), &m)
}

// putAsync sends PUT key=value from the client endpoint on a goroutine and
// delivers the reply; a call that fails is an error of the test and is
// delivered as StatusInternal.
func (e *env) putAsync(key, value string) <-chan wire.Message {
	done := make(chan wire.Message, 1)
	go func() {
		r, err := e.tryCall(e.client, wire.OpPut, key, []byte(value))
		if err != nil {
			e.t.Error(err)
			r.Status = wire.StatusInternal
		}
		done <- r
	}()
	return done
}

// call sends a request from the client endpoint.
func (e *env) call(op wire.Op, key string, value []byte) wire.Message {
	e.t.Helper()
	return e.callFrom(e.client, op, key, value)
}

// mustStatus calls and checks the reply's status.
func (e *env) mustStatus(op wire.Op, key string, value []byte, want wire.Status) wire.Message {
	e.t.Helper()
	r := e.call(op, key, value)
	if r.Status != want {
		e.t.Fatalf("%s %q: status %s, want %s", op, key, r.Status, want)
	}
	return r
}

// redisValue reads key with the test's own client: the value, or "<nil>".
func (e *env) redisValue(key string) string {
	v, err := e.rdb.Get(context.Background(), key).Result()
	if errors.Is(err, redis.Nil) {
		return "<nil>"
	} else if err != nil {
		return "<error: " + err.Error() + ">"
	}
	return v
}

// redisTTL is key's remaining expiry in Redis (negative: none).
func (e *env) redisTTL(key string) time.Duration {
	return e.rdb.PTTL(context.Background(), key).Val()
}

// eventually waits until cond holds, yielding between checks.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(patience)
	defer deadline.Stop()
	for !cond() {
		runtime.Gosched()
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// receive waits for a value on ch.
func receive[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	deadline := time.NewTimer(patience)
	defer deadline.Stop()
	select {
	case v := <-ch:
		return v
	case <-deadline.C:
		t.Fatal("timed out waiting on a channel")
		panic("unreachable")
	}
}

// gate blocks hooks until it is opened; hooks also give up when the test
// ends, so that cleanup never hangs.
type gate struct {
	t    *testing.T
	open chan struct{}
	once sync.Once
}

func newGate(t *testing.T) *gate {
	g := &gate{t: t, open: make(chan struct{})}
	t.Cleanup(g.release)
	return g
}

func (g *gate) wait() {
	select {
	case <-g.open:
	case <-g.t.Context().Done():
	}
}

func (g *gate) release() { g.once.Do(func() { close(g.open) }) }

// rawConn is a bare UDP socket for sending hand-made datagrams.
type rawConn struct {
	t    *testing.T
	conn *net.UDPConn
}

func newRawConn(t *testing.T) *rawConn {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &rawConn{t: t, conn: c}
}

func (r *rawConn) send(dst netip.AddrPort, b []byte) {
	r.t.Helper()
	if _, err := r.conn.WriteToUDPAddrPort(b, dst); err != nil {
		r.t.Fatal(err)
	}
}

// receive reads one single-datagram message.
func (r *rawConn) receive() wire.Message {
	r.t.Helper()
	buf := make([]byte, wire.MaxDatagram)
	if err := r.conn.SetReadDeadline(time.Now().Add(patience)); err != nil {
		r.t.Fatal(err)
	}
	n, _, err := r.conn.ReadFromUDPAddrPort(buf)
	if err != nil {
		r.t.Fatal(err)
	}
	m, err := wire.Decode(buf[:n])
	if err != nil {
		r.t.Fatal(err)
	}
	return m
}
