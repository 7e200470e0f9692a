package cachenode

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/hotkey"
	"github.com/distcache/distcache/placement/partmap"
)

const (
	testCluster = "t"
	testLayer   = "L"
	// testThreshold is the detector threshold of test nodes: a key is hot
	// after this many misses in an interval.
	testThreshold = 2
	// testDeadline bounds every wait of a test; it is a guard against
	// hangs, never a measurement.
	testDeadline = 30 * time.Second
)

// harness is a started cache node, a stub shim behind it and a client
// endpoint, all on 127.0.0.1.
type harness struct {
	t      *testing.T
	ctx    context.Context
	node   *Node
	shim   *stubShim
	client *transport.Endpoint
	m      *partmap.Map // the map last given to the node
	timers *parkTimers  // the node's park timeouts under withParkTimeoutsFiredByTest
}

type harnessConfig struct {
	cfg      Config
	nodes    int // members in the layer; the node under test is member 0
	failed   []int
	noShim   bool // the storage shard has no address
	stubOpts []stubOption
	timers   bool // the test fires park timeouts (harness.timers)
	noStart  bool // the test starts the node (withoutStart)
}

type harnessOption func(*harnessConfig)

// withConfig changes the node's configuration.
func withConfig(f func(*Config)) harnessOption { return func(h *harnessConfig) { f(&h.cfg) } }

// withMembers makes the layer n members wide, those in failed Failed.
func withMembers(n int, failed ...int) harnessOption {
	return func(h *harnessConfig) { h.nodes, h.failed = n, failed }
}

// withStub configures the stub shim.
func withStub(opts ...stubOption) harnessOption {
	return func(h *harnessConfig) { h.stubOpts = append(h.stubOpts, opts...) }
}

// withoutStart leaves the node bound but not serving: datagrams sent to it
// wait in its socket until the test calls h.node.Start.
func withoutStart() harnessOption { return func(h *harnessConfig) { h.noStart = true } }

// withoutShimAddress leaves the storage shard's address empty.
// parkTimers holds the park timeouts the node started, for the test to fire.
type parkTimers struct {
	mu      sync.Mutex // guards expires
	expires []func()
}

func (pt *parkTimers) after(_ time.Duration, expire func()) stopper {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	pt.expires = append(pt.expires, expire)
	return stoppedTimer{}
}

// fire runs every timeout started so far, as if ParkTimeout had passed,
// and reports how many there were.
func (pt *parkTimers) fire() int {
	pt.mu.Lock()
	fs := pt.expires
	pt.expires = nil
	pt.mu.Unlock()
	for _, f := range fs {
		f()
	}
	return len(fs)
}

// stoppedTimer is a timeout that only parkTimers.fire runs.
type stoppedTimer struct{}

func (stoppedTimer) Stop() bool { return true }

// withParkTimeoutsFiredByTest makes park timeouts pass only when the test
// calls harness.timers.fire, never by the clock: on a loaded machine a
// timeout would otherwise forward parked reads before the phase 2 the test
// sends, or split the readers a test parks into two backend reads.
func withParkTimeoutsFiredByTest() harnessOption { return func(h *harnessConfig) { h.timers = true } }

func withoutShimAddress() harnessOption { return func(h *harnessConfig) { h.noShim = true } }

func testConfig() Config {
	return Config{
		Layer:          testLayer,
		Member:         partmap.MemberName(testCluster, testLayer, 0),
		Transport:      transport.Config{Addr: "127.0.0.1:0"},
		Interval:       -1,
		Detector:       hotkey.Config{Threshold: testThreshold, SketchWidth: 1024, BloomBits: 4096},
		BackendTimeout: testDeadline, // held requests must not time out
		Lease:          testDeadline, // renewed by setMap; it outlasts the test
	}
}

func newHarness(t *testing.T, opts ...harnessOption) *harness {
	t.Helper()
	hc := harnessConfig{cfg: testConfig(), nodes: 1}
	for _, o := range opts {
		o(&hc)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	t.Cleanup(cancel)
	h := &harness{t: t, ctx: ctx, shim: newStubShim(t, hc.stubOpts...), timers: &parkTimers{}}
	n, err := New(hc.cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Error(err)
		}
	})
	h.node = n
	if hc.timers {
		n.parkAfter = h.timers.after
	}
	m, err := partmap.Build(partmap.Spec{
		Cluster: testCluster, Racks: 1, ShardsPerRack: 1, StorageSeed: 7,
		Layers: []partmap.LayerSpec{{Name: testLayer, Nodes: hc.nodes, Seed: 11, VirtualNodes: 16}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !hc.noShim {
		m.Storage.Racks[0].Shards[0].Address = h.shim.addr().String()
	}
	m.Layers[0].Members[0].Address = n.Addr().String()
	for _, i := range hc.failed {
		m.Layers[0].Members[i].State = partmap.Failed
	}
	h.setMap(m)
	if !hc.noStart {
		if err := n.Start(); err != nil {
			t.Fatal(err)
		}
	}
	// The client does not retransmit (loopback does not lose datagrams), so
	// the node's counters are exact.
	h.client, err = transport.Listen(transport.Config{Addr: "127.0.0.1:0", Retransmit: testDeadline})
	if err != nil {
		t.Fatal(err)
	}
	h.client.Start(nil)
	t.Cleanup(func() { _ = h.client.Close() })
	return h
}

// setMap compiles m, gives it to the node and renews the node's serving
// lease with it, as a read of the map source that found m would.
func (h *harness) setMap(m *partmap.Map) *partmap.Placement {
	h.t.Helper()
	p, err := partmap.Compile(m)
	if err != nil {
		h.t.Fatal(err)
	}
	at := time.Now()
	if err := h.node.SetMap(p); err != nil {
		h.t.Fatal(err)
	}
	h.node.Renew(at, m.Version)
	h.m = m
	return p
}

// setState gives the node the next map with member i in state.
func (h *harness) setState(i int, state partmap.MemberState) *partmap.Placement {
	h.t.Helper()
	next, changed, err := h.m.WithState(h.m.Layers[0].Members[i].Name, state)
	if err != nil || !changed {
		h.t.Fatalf("cannot set member %d %s: changed=%v err=%v", i, state, changed, err)
	}
	return h.setMap(next)
}

// call sends m to the node and returns the reply.
func (h *harness) call(m *wire.Message) wire.Message {
	h.t.Helper()
	rep, err := h.client.Call(h.ctx, h.node.Addr(), m)
	if err != nil {
		h.t.Fatal(err)
	}
	return rep
}

func (h *harness) get(key string) wire.Message {
	h.t.Helper()
	return h.call(&wire.Message{Header: wire.Header{Op: wire.OpGet}, Key: []byte(key)})
}

// getAsync sends a GET from a goroutine and delivers the reply.
func (h *harness) getAsync(key string) <-chan wire.Message { return h.getAsyncFlags(key, 0) }

// getAsyncFlags sends a GET with flags from a goroutine and delivers the
// reply.
func (h *harness) getAsyncFlags(key string, flags wire.Flag) <-chan wire.Message {
	out := make(chan wire.Message, 1)
	go func() {
		rep, err := h.client.Call(h.ctx, h.node.Addr(), &wire.Message{Header: wire.Header{Op: wire.OpGet, Flags: flags}, Key: []byte(key)})
		if err != nil {
			h.t.Error(err)
		}
		out <- rep
	}()
	return out
}

func (h *harness) invalidate(key string, v uint64) {
	h.t.Helper()
	rep := h.call(&wire.Message{Header: wire.Header{Op: wire.OpInvalidate, ValueVersion: v}, Key: []byte(key)})
	if rep.Op != wire.OpInvalidateAck || rep.Status != wire.StatusOK {
		h.t.Fatalf("INVALIDATE %s: got %s %s", key, rep.Op, rep.Status)
	}
}

func (h *harness) update(key string, v uint64, value string) {
	h.t.Helper()
	h.updateMessage(&wire.Message{Header: wire.Header{Op: wire.OpUpdate, ValueVersion: v}, Key: []byte(key), Value: []byte(value)})
}

// updateStatus sends the phase 2 of a write that ended with status (no value).
func (h *harness) updateStatus(key string, v uint64, status wire.Status) {
	h.t.Helper()
	h.updateMessage(&wire.Message{Header: wire.Header{Op: wire.OpUpdate, Status: status, ValueVersion: v}, Key: []byte(key)})
}

func (h *harness) updateMessage(m *wire.Message) {
	h.t.Helper()
	key := string(m.Key)
	rep := h.call(m)
	if rep.Op != wire.OpUpdateAck || rep.Status != wire.StatusOK {
		h.t.Fatalf("UPDATE %s: got %s %s", key, rep.Op, rep.Status)
	}
}

// heat sends n GETs of key (misses) and waits for each reply.
func (h *harness) heat(key string, n int) {
	h.t.Helper()
	for range n {
		if rep := h.get(key); rep.Has(wire.FlagHit) {
			h.t.Fatalf("GET %s: unexpected hit", key)
		}
	}
}

// insertAsync runs InsertHot in a goroutine.
func (h *harness) insertAsync() <-chan InsertResult {
	out := make(chan InsertResult, 1)
	go func() { out <- h.node.InsertHot(h.ctx) }()
	return out
}

func (h *harness) wait(ch <-chan InsertResult) InsertResult {
	h.t.Helper()
	select {
	case r := <-ch:
		return r
	case <-h.ctx.Done():
		h.t.Fatal("InsertHot did not return")
		return InsertResult{}
	}
}

// cache makes key hot and inserts it with the stub serving value at
// version c.
func (h *harness) cache(key, value string, c uint64) {
	h.t.Helper()
	h.shim.setValue(key, value)
	h.shim.setCounter(c)
	h.heat(key, testThreshold)
	r := h.node.InsertHot(h.ctx)
	if r.Inserted != 1 {
		h.t.Fatalf("InsertHot for %s: %+v, want 1 inserted", key, r)
	}
}

// pendingFill makes key hot and starts an insertion whose FETCH the stub
// holds; it returns the held FETCH and the insertion's result channel.
func (h *harness) pendingFill(key string) (*heldRequest, <-chan InsertResult) {
	h.t.Helper()
	h.shim.setValue(key, "miss-value")
	h.heat(key, testThreshold)
	h.shim.setHold(wire.OpFetch, true)
	done := h.insertAsync()
	f := h.shim.nextHeld(h.ctx, h.t)
	if f.req.Op != wire.OpFetch || string(f.req.Key) != key {
		h.t.Fatalf("held %s %q, want FETCH %q", f.req.Op, f.req.Key, key)
	}
	return f, done
}

// eventually polls cond until it holds, failing after testDeadline.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testDeadline)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

// keysOwnedBy returns n keys owned by member under p in layer 0.
func keysOwnedBy(p *partmap.Placement, member, n int) []string {
	var out []string
	for i := 0; len(out) < n && i < 100000; i++ {
		k := fmt.Sprintf("key-%d", i)
		if p.Owner(0, k) == member {
			out = append(out, k)
		}
	}
	return out
}

// rawSend sends arbitrary datagrams to dst from a plain UDP socket.
func rawSend(t *testing.T, dst netip.AddrPort, datagrams ...[]byte) {
	t.Helper()
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(dst))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, d := range datagrams {
		if _, err := c.Write(d); err != nil {
			t.Fatal(err)
		}
	}
}
