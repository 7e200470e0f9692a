package driver

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/dataplane/cachenode"
	"github.com/distcache/distcache/dataplane/mapwatch"
	"github.com/distcache/distcache/dataplane/shim"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/hotkey"
	"github.com/distcache/distcache/internal/redistest"
	"github.com/distcache/distcache/placement/partmap"
)

// Emulated capacities of the test cluster, in work units per second: low,
// so the driver's probe chooses small rates.
const (
	testShardRate = 500
	testNodeRate  = 1000
)

// testCluster is a real DistCache cluster in the test process: a
// redis-server and a shim per storage shard (2 racks × 1 shard), a spine
// layer of 2 nodes and a leaf layer bound to the racks, on loopback UDP,
// publishing its partition map to a file as standalone mode does. It
// implements Cluster from the components' Stats. The nodes run no insertion
// loop: InsertHot fills their caches when the test says so.
type testCluster struct {
	t       *testing.T
	mapFile string
	redis   map[string]*redistest.Server // by shard name
	shims   map[string]*shim.Shim        // by shard name

	mu     sync.Mutex                 // guards nodes, killed and p
	nodes  map[string]*cachenode.Node // running nodes by member name
	killed map[string]netip.AddrPort  // killed members' addresses
	p      *partmap.Placement         // the map last published
}

func newTestCluster(t *testing.T) *testCluster { return newTestClusterOf(t, 2, 1, 2) }

// newTestClusterOf starts a cluster of racks × shards storage shards and
// spine spine nodes (and a leaf node per rack).
func newTestClusterOf(t *testing.T, racks, shards, spine int) *testCluster {
	t.Helper()
	m, err := partmap.Build(partmap.Spec{
		Cluster: "drv", Racks: racks, ShardsPerRack: shards,
		Layers: []partmap.LayerSpec{{Name: "spine", Nodes: spine}, {Name: "leaf", BoundToRacks: true}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &testCluster{t: t, mapFile: filepath.Join(t.TempDir(), "map.json"), redis: map[string]*redistest.Server{},
		shims: map[string]*shim.Shim{}, nodes: map[string]*cachenode.Node{}, killed: map[string]netip.AddrPort{}}
	for r := range m.Storage.Racks {
		for i := range m.Storage.Racks[r].Shards {
			sh := &m.Storage.Racks[r].Shards[i]
			srv := redistest.Start(t)
			s, err := shim.New(shim.Config{
				Shard: sh.Name, Transport: transport.Config{Addr: "127.0.0.1:0"},
				Redis: &redis.Options{Addr: srv.Addr()}, InvalidateTimeout: time.Second, EmulatedRate: testShardRate,
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			c.redis[sh.Name], c.shims[sh.Name] = srv, s
			sh.Address = s.Addr().String()
		}
	}
	for l := range m.Layers {
		for i := range m.Layers[l].Members {
			mb := &m.Layers[l].Members[i]
			mb.Address = c.newNode(m.Layers[l].Name, mb.Name, "127.0.0.1:0").Addr().String()
		}
	}
	c.publish(m)
	for _, s := range c.shims {
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range c.nodes {
		if err := n.Start(); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// newNode creates (but does not start) the cache node of member.
func (c *testCluster) newNode(layer, member, addr string) *cachenode.Node {
	n, err := cachenode.New(cachenode.Config{
		Layer: layer, Member: member, Transport: transport.Config{Addr: addr},
		Capacity: 32, Interval: -1, EmulatedRate: testNodeRate,
		// A small sketch for a small key space.
		Detector: hotkey.Config{Threshold: 2, SketchWidth: 1024, BloomBits: 4096},
	})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { _ = n.Close() })
	c.mu.Lock()
	c.nodes[member] = n
	c.mu.Unlock()
	return n
}

// publish writes m to the map file and hands it to every component.
func (c *testCluster) publish(m *partmap.Map) {
	c.t.Helper()
	p, err := partmap.Compile(m)
	if err != nil {
		c.t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.p = p
	for name, s := range c.shims {
		if err := s.SetMap(p); err != nil {
			c.t.Fatalf("shim %s: %v", name, err)
		}
	}
	for name, n := range c.nodes {
		if err := n.SetMap(p); err != nil {
			c.t.Fatalf("node %s: %v", name, err)
		}
	}
	if err := mapwatch.WriteFile(c.mapFile, m); err != nil {
		c.t.Fatal(err)
	}
}

// setState publishes the next map version with member in state.
func (c *testCluster) setState(member string, state partmap.MemberState) error {
	c.mu.Lock()
	next, changed, err := c.p.Map().WithState(member, state)
	c.mu.Unlock()
	if err != nil || !changed {
		return fmt.Errorf("cannot set %s %s: changed=%v %w", member, state, changed, err)
	}
	c.publish(next)
	return nil
}

// Work implements Cluster from the shims' and nodes' Stats.
func (c *testCluster) Work(context.Context) ([]Work, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Work
	m := c.p.Map()
	for _, l := range m.Layers {
		for _, mb := range l.Members {
			if n, ok := c.nodes[mb.Name]; ok {
				out = append(out, Work{Name: mb.Name, Node: true, Layer: l.Name, Units: n.Stats().Work, Capacity: testNodeRate})
			}
		}
	}
	for _, r := range m.Storage.Racks {
		for _, sh := range r.Shards {
			st := c.shims[sh.Name].Stats()
			out = append(out, Work{Name: sh.Name, Units: st.Work, Capacity: testShardRate,
				Coherence: st.Invalidations + st.UpdatesSent})
		}
	}
	return out, nil
}

// Kill closes member's node, then marks it failed in the map, as the
// control loop does once it notices.
func (c *testCluster) Kill(_ context.Context, member string) error {
	c.mu.Lock()
	n, ok := c.nodes[member]
	delete(c.nodes, member)
	c.mu.Unlock()
	if !ok {
		return fmt.Errorf("no running member %s", member)
	}
	addr := n.Addr()
	if err := n.Close(); err != nil {
		return err
	}
	c.mu.Lock()
	c.killed[member] = addr
	c.mu.Unlock()
	return c.setState(member, partmap.Failed)
}

// Restart starts a fresh node (empty cache) for member on its old address,
// then marks it active again.
func (c *testCluster) Restart(_ context.Context, member string) error {
	c.mu.Lock()
	addr, ok := c.killed[member]
	delete(c.killed, member)
	p := c.p
	c.mu.Unlock()
	if !ok {
		return fmt.Errorf("member %s was not killed", member)
	}
	l, _, _ := p.Map().Member(member)
	n := c.newNode(p.Map().Layers[l].Name, member, addr.String())
	if err := n.SetMap(p); err != nil {
		return err
	}
	if err := n.Start(); err != nil {
		return err
	}
	return c.setState(member, partmap.Active)
}

// insertHot runs one insertion interval on every running node.
func (c *testCluster) insertHot(ctx context.Context) {
	c.mu.Lock()
	nodes := make([]*cachenode.Node, 0, len(c.nodes))
	for _, n := range c.nodes {
		nodes = append(nodes, n)
	}
	c.mu.Unlock()
	for _, n := range nodes {
		n.InsertHot(ctx)
	}
}

// nodeGets sums the GETs the running nodes received.
func (c *testCluster) nodeGets() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n uint64
	for _, nd := range c.nodes {
		n += nd.Stats().Gets
	}
	return n
}

// redisOf returns a Redis client of key's storage shard.
func (c *testCluster) redisOf(key string) *redis.Client {
	c.mu.Lock()
	r, s := c.p.Shard(key)
	name := c.p.Map().Storage.Racks[r].Shards[s].Name
	c.mu.Unlock()
	rc := redis.NewClient(&redis.Options{Addr: c.redis[name].Addr()})
	c.t.Cleanup(func() { _ = rc.Close() })
	return rc
}

// spine returns the spine members' names.
func (c *testCluster) spine() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, mb := range c.p.Map().Layers[0].Members {
		out = append(out, mb.Name)
	}
	return slices.Clip(out)
}
