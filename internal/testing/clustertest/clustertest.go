// Package clustertest starts a DistCache cluster inside a test process: a
// real redis-server (package redistest) and a storage shim per shard, a
// spine layer on its own ring and a leaf layer bound to the storage racks
// (DistCache §3), all on loopback UDP. Tests publish partition map versions
// to every component (and optionally to a map file, as standalone mode
// does), stop and restart cache nodes, and create clients that follow the
// map. The published map is the nodes' map source: every running node
// renews its serving lease from it every RenewEvery, as a node process does
// from its map file.
package clustertest

import (
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/dataplane/cachenode"
	"github.com/distcache/distcache/dataplane/mapwatch"
	"github.com/distcache/distcache/dataplane/shim"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/internal/testing/redistest"
	"github.com/distcache/distcache/internal/testing/switchtest"
	"github.com/distcache/distcache/placement/partmap"
)

// RenewEvery is how often the cluster renews its nodes' serving leases.
const RenewEvery = 50 * time.Millisecond

// Config shapes a cluster.
type Config struct {
	// Name is the cluster's name in the map.
	Name string
	// Racks, ShardsPerRack and Spine are the storage racks, shards per
	// rack and spine nodes; the leaf layer has a node per rack.
	Racks, ShardsPerRack, Spine int
	// RedisOptions configure every redis-server.
	RedisOptions []redistest.Option
	// Shim and Node, when set, edit each shim's and node's configuration
	// (their transport address and identity are set already).
	Shim func(*shim.Config)
	Node func(*cachenode.Config)
	// MapFile, when set, receives every map version published.
	MapFile string
	// SwitchSpine makes the spine layer switch-backed: a software switch
	// per member with its controller (package switchtest), configured by
	// Switch.
	SwitchSpine bool
	Switch      switchtest.Config
	// DirectReads names every shard's Redis in the map (Shard.Redis), for
	// clients that read it themselves; DirectWrites lets them write it
	// too (Shard.DirectWrites).
	DirectReads, DirectWrites bool
	// HashTags places keys by their hash tags (partmap.Storage.HashTags).
	HashTags bool
}

// Cluster is a running cluster. Its methods are safe for concurrent use
// unless they say otherwise.
type Cluster struct {
	t   testing.TB
	cfg Config
	// Redis and Shims are the storage servers and shims by shard name;
	// they do not change after Start.
	Redis map[string]*redistest.Server
	Shims map[string]*shim.Shim

	mu       sync.Mutex                    // guards nodes, p and clients
	nodes    map[string]*cachenode.Node    // running nodes by member name
	switches map[string]*switchtest.Member // switch members by name; fixed after Start
	p        *partmap.Placement            // the map last published
	clients  []*client.Client              // clients following the map

	renewErrors  atomic.Uint64 // switch renewals that failed
	lastRenewErr atomic.Value  // the last one's error
}

// Start starts a cluster; everything stops when the test ends. It must be
// called from the test's goroutine.
func Start(t testing.TB, cfg Config) *Cluster {
	t.Helper()
	m, err := partmap.Build(partmap.Spec{
		Cluster: cfg.Name, Racks: cfg.Racks, ShardsPerRack: cfg.ShardsPerRack, HashTags: cfg.HashTags,
		Layers: []partmap.LayerSpec{{Name: "spine", Nodes: cfg.Spine, Switch: cfg.SwitchSpine}, {Name: "leaf", BoundToRacks: true}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{t: t, cfg: cfg, Redis: map[string]*redistest.Server{}, Shims: map[string]*shim.Shim{},
		nodes: map[string]*cachenode.Node{}, switches: map[string]*switchtest.Member{}}
	for r := range m.Storage.Racks {
		for i := range m.Storage.Racks[r].Shards {
			sh := &m.Storage.Racks[r].Shards[i]
			srv := redistest.Start(t, cfg.RedisOptions...)
			sc := shim.Config{Shard: sh.Name, Transport: transport.Config{Addr: "127.0.0.1:0"}, Redis: &redis.Options{Addr: srv.Addr()}}
			if cfg.Shim != nil {
				cfg.Shim(&sc)
			}
			s, err := shim.New(sc)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			c.Redis[sh.Name], c.Shims[sh.Name] = srv, s
			sh.Address = s.Addr().String()
			if cfg.DirectReads {
				sh.Redis, sh.DirectWrites = srv.Addr(), cfg.DirectWrites
			}
		}
	}
	var created []*cachenode.Node
	for l := range m.Layers {
		for i := range m.Layers[l].Members {
			mb := &m.Layers[l].Members[i]
			if m.Layers[l].Switch {
				sc := cfg.Switch
				sc.ReadPorts = max(sc.ReadPorts, cfg.Racks*cfg.ShardsPerRack)
				sw := switchtest.Start(t, mb.Name, sc)
				c.switches[mb.Name] = sw
				mb.Address = sw.Addr().String()
				continue
			}
			n, err := c.newNode(m.Layers[l].Name, mb.Name, "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			mb.Address = n.Addr().String()
			created = append(created, n)
		}
	}
	c.Publish(m)
	for _, s := range c.Shims {
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range created {
		if err := n.Start(); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	var renewing sync.WaitGroup
	renewing.Go(func() { c.renewLoop(done) })
	t.Cleanup(func() { close(done); renewing.Wait() })
	return c
}

// renewLoop renews every running node's lease every RenewEvery until done
// is closed.
func (c *Cluster) renewLoop(done <-chan struct{}) {
	t := time.NewTicker(RenewEvery)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			c.renew()
		}
	}
}

// renew reads the published map, as a node reads its map file, and renews
// every running node's lease from that read.
func (c *Cluster) renew() {
	at := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.nodes {
		n.Renew(at, c.p.Version())
	}
	c.renewSwitches(at)
}

// renewSwitches applies the published map to every switch and renews its
// lease from at; a switch that cannot be reached keeps its old lease,
// which runs out. The caller holds c.mu.
func (c *Cluster) renewSwitches(at time.Time) {
	for name, sw := range c.switches {
		if err := sw.Renew(c.p, at); err != nil {
			c.renewErrors.Add(1)
			c.lastRenewErr.Store(fmt.Errorf("switch %s: %w", name, err))
		}
	}
}

// RenewErrors counts the switch renewals that failed, with the last one's
// error.
func (c *Cluster) RenewErrors() (uint64, error) {
	err, _ := c.lastRenewErr.Load().(error)
	return c.renewErrors.Load(), err
}

// Switches returns the switch members by name.
func (c *Cluster) Switches() map[string]*switchtest.Member { return c.switches }

// newNode creates (but does not start) the cache node of member and
// records it as running.
func (c *Cluster) newNode(layer, member, addr string) (*cachenode.Node, error) {
	nc := cachenode.Config{Layer: layer, Member: member, Transport: transport.Config{Addr: addr}, ShimLeases: true}
	if c.cfg.Node != nil {
		c.cfg.Node(&nc)
	}
	n, err := cachenode.New(nc)
	if err != nil {
		return nil, fmt.Errorf("cannot create node %s: %w", member, err)
	}
	c.t.Cleanup(func() { _ = n.Close() })
	c.mu.Lock()
	c.nodes[member] = n
	c.mu.Unlock()
	return n, nil
}

// Publish compiles m and hands it to every shim, running node and client,
// and writes it to Config.MapFile if set, as the operator's ConfigMap (or
// standalone mode's map file) would. It fails the test on an error, so it
// must be called from the test's goroutine.
func (c *Cluster) Publish(m *partmap.Map) {
	c.t.Helper()
	if err := c.publish(m); err != nil {
		c.t.Fatal(err)
	}
}

func (c *Cluster) publish(m *partmap.Map) error {
	p, err := partmap.Compile(m)
	if err != nil {
		return err
	}
	at := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.p = p
	for name, s := range c.Shims {
		if err := s.SetMap(p); err != nil {
			return fmt.Errorf("shim %s: %w", name, err)
		}
	}
	for name, n := range c.nodes {
		if err := n.SetMap(p); err != nil {
			return fmt.Errorf("node %s: %w", name, err)
		}
		n.Renew(at, p.Version())
	}
	c.renewSwitches(at)
	for _, cl := range c.clients {
		cl.SetMap(p)
	}
	if c.cfg.MapFile != "" {
		return mapwatch.WriteFile(c.cfg.MapFile, m)
	}
	return nil
}

// SetState publishes the next map version with member in state.
func (c *Cluster) SetState(member string, state partmap.MemberState) error {
	next, changed, err := c.Placement().Map().WithState(member, state)
	if err != nil || !changed {
		return fmt.Errorf("cannot set %s %s: changed=%v %w", member, state, changed, err)
	}
	return c.publish(next)
}

// StopNode closes member's running node and returns its address.
func (c *Cluster) StopNode(member string) (netip.AddrPort, error) {
	c.mu.Lock()
	n, ok := c.nodes[member]
	delete(c.nodes, member)
	c.mu.Unlock()
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("no running member %s", member)
	}
	return n.Addr(), n.Close()
}

// StartNode starts a fresh node (empty cache) for member on addr with the
// current map.
func (c *Cluster) StartNode(member string, addr netip.AddrPort) error {
	at := time.Now() // the lease starts no later than the read of the map
	p := c.Placement()
	l, _, ok := p.Map().Member(member)
	if !ok {
		return fmt.Errorf("no member %s in the map", member)
	}
	n, err := c.newNode(p.Map().Layers[l].Name, member, addr.String())
	if err != nil {
		return err
	}
	if err := n.SetMap(p); err != nil {
		return err
	}
	n.Renew(at, p.Version())
	return n.Start()
}

// Placement returns the map last published.
func (c *Cluster) Placement() *partmap.Placement {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.p
}

// Nodes returns the running nodes by member name.
func (c *Cluster) Nodes() map[string]*cachenode.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]*cachenode.Node, len(c.nodes))
	for name, n := range c.nodes {
		out[name] = n
	}
	return out
}

// Running reports whether member's node is running.
func (c *Cluster) Running(member string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.nodes[member]
	return ok
}

// NewClient returns a client routed by the current map that follows every
// later version; it is closed when the test ends.
func (c *Cluster) NewClient(cfg client.Config) *client.Client {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	cl, err := client.New(cfg, c.p)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { _ = cl.Close() })
	c.clients = append(c.clients, cl)
	return cl
}

// ShardOf returns the name of key's storage shard.
func (c *Cluster) ShardOf(key string) string {
	p := c.Placement()
	r, s := p.Shard(key)
	return p.Map().Storage.Racks[r].Shards[s].Name
}

// Members returns the member names of layer l, in map order.
func (c *Cluster) Members(l int) []string {
	var out []string
	for _, mb := range c.Placement().Map().Layers[l].Members {
		out = append(out, mb.Name)
	}
	return out
}
