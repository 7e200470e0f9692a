package e2e

import (
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/dataplane/cachenode"
	"github.com/distcache/distcache/dataplane/shim"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/hotkey"
	"github.com/distcache/distcache/internal/redistest"
	"github.com/distcache/distcache/placement/partmap"
)

// clusterConfig shapes a test cluster.
type clusterConfig struct {
	racks, shardsPerRack int
	spineNodes           int
	redisOpts            []redistest.Option
	insertEvery          time.Duration
}

type clusterOption func(*clusterConfig)

func withAppendOnlyRedis() clusterOption {
	return func(c *clusterConfig) { c.redisOpts = append(c.redisOpts, redistest.WithAppendOnly()) }
}

// cluster is a DistCache cluster in the test process: one real redis-server
// and one shim per storage shard, a spine layer on its own ring and a leaf
// layer bound to the storage racks (DistCache §3), all on loopback UDP.
type cluster struct {
	t   *testing.T
	cfg clusterConfig

	redis  map[string]*redistest.Server // by shard name
	shims  map[string]*shim.Shim        // by shard name
	mu     sync.Mutex                   // guards nodes, p and clients
	nodes  map[string]*cachenode.Node   // by member name
	p      *partmap.Placement           // the map last published
	client []*client.Client
}

func newCluster(t *testing.T, opts ...clusterOption) *cluster {
	t.Helper()
	cfg := clusterConfig{racks: 2, shardsPerRack: 1, spineNodes: 2, insertEvery: 20 * time.Millisecond}
	for _, o := range opts {
		o(&cfg)
	}
	m, err := partmap.Build(partmap.Spec{
		Cluster: "e2e", Racks: cfg.racks, ShardsPerRack: cfg.shardsPerRack,
		Layers: []partmap.LayerSpec{{Name: "spine", Nodes: cfg.spineNodes}, {Name: "leaf", BoundToRacks: true}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, cfg: cfg, redis: map[string]*redistest.Server{}, shims: map[string]*shim.Shim{}, nodes: map[string]*cachenode.Node{}}
	for r := range m.Storage.Racks {
		for i := range m.Storage.Racks[r].Shards {
			sh := &m.Storage.Racks[r].Shards[i]
			srv := redistest.Start(t, cfg.redisOpts...)
			s, err := shim.New(shim.Config{
				Shard: sh.Name, Transport: transport.Config{Addr: "127.0.0.1:0"},
				Redis: &redis.Options{Addr: srv.Addr()}, InvalidateTimeout: time.Second,
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
			n := c.newNode(m.Layers[l].Name, mb.Name, "127.0.0.1:0")
			mb.Address = n.Addr().String()
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
func (c *cluster) newNode(layer, member, addr string) *cachenode.Node {
	n, err := cachenode.New(cachenode.Config{
		Layer: layer, Member: member, Transport: transport.Config{Addr: addr},
		Capacity: 32, Interval: c.cfg.insertEvery,
		// A small sketch: the test has 200 keys, and a reset per 20 ms
		// interval of the default 4 × 65536 counters is slow under -race.
		Detector: hotkey.Config{Threshold: 3, SketchWidth: 1024, BloomBits: 4096},
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

// publish compiles m and hands it to every component, as the operator's
// ConfigMap (or standalone mode's map file) would.
func (c *cluster) publish(m *partmap.Map) {
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
	for _, cl := range c.client {
		cl.SetMap(p)
	}
}

// setState publishes the next map version with member in state.
func (c *cluster) setState(member string, state partmap.MemberState) {
	c.t.Helper()
	c.mu.Lock()
	next, changed, err := c.p.Map().WithState(member, state)
	c.mu.Unlock()
	if err != nil || !changed {
		c.t.Fatalf("cannot set %s %s: changed=%v %v", member, state, changed, err)
	}
	c.publish(next)
}

// failNode marks member failed in the map, then stops its process.
func (c *cluster) failNode(member string) netip.AddrPort {
	c.t.Helper()
	c.setState(member, partmap.Failed)
	c.mu.Lock()
	n := c.nodes[member]
	delete(c.nodes, member)
	c.mu.Unlock()
	addr := n.Addr()
	if err := n.Close(); err != nil {
		c.t.Fatal(err)
	}
	return addr
}

// restoreNode starts a fresh process for member on its old address (empty
// cache), then marks it active again.
func (c *cluster) restoreNode(member string, addr netip.AddrPort) {
	c.t.Helper()
	c.mu.Lock()
	p := c.p
	c.mu.Unlock()
	l, _, ok := p.Map().Member(member)
	if !ok {
		c.t.Fatalf("no member %s", member)
	}
	n := c.newNode(p.Map().Layers[l].Name, member, addr.String())
	if err := n.SetMap(p); err != nil {
		c.t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.setState(member, partmap.Active)
}

// newClient returns a client routed by the current map.
func (c *cluster) newClient() *client.Client {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	cl, err := client.New(client.Config{AttemptTimeout: 500 * time.Millisecond}, c.p)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { _ = cl.Close() })
	c.client = append(c.client, cl)
	return cl
}

// shardOf returns the name of the storage shard of key.
func (c *cluster) shardOf(key string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, s := c.p.Shard(key)
	return c.p.Map().Storage.Racks[r].Shards[s].Name
}

// spineMember returns the name of spine member i.
func (c *cluster) spineMember(i int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.p.Map().Layers[0].Members[i].Name
}

// nodeStats sums the node counters.
func (c *cluster) nodeStats() (hits, malformed uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.nodes {
		st := n.Stats()
		hits += st.Hits
		malformed += st.Transport.Malformed
	}
	return hits, malformed
}

func (c *cluster) String() string {
	return fmt.Sprintf("%d racks × %d shards, %d spine + %d leaf nodes", c.cfg.racks, c.cfg.shardsPerRack, c.cfg.spineNodes, c.cfg.racks)
}
