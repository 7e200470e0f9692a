package e2e

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/dataplane/cachenode"
	"github.com/distcache/distcache/dataplane/shim"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wireauth"
	"github.com/distcache/distcache/fabric/cacheswitch"
	"github.com/distcache/distcache/hotkey"
	"github.com/distcache/distcache/internal/testing/clustertest"
	"github.com/distcache/distcache/internal/testing/redistest"
	"github.com/distcache/distcache/internal/testing/switchtest"
	"github.com/distcache/distcache/placement/partmap"
)

// clusterConfig shapes a test cluster.
type clusterConfig struct {
	racks, shardsPerRack int
	spineNodes           int
	redisOpts            []redistest.Option
	insertEvery          time.Duration
	// auth, when set, is the data-plane key every shim, node and client
	// signs and checks with, stamping every signed datagram and requiring
	// stamps (transport.ReplayRequire).
	auth transport.Authenticator
	// bundle makes every shim, node and client send bundles
	// (transport.Config.Bundle).
	bundle bool
	// switchSpine makes the spine layer switch-backed: software switches
	// programmed by their controllers over P4Runtime.
	switchSpine bool
}

type clusterOption func(*clusterConfig)

// withDataPlaneKey runs the cluster authenticated with one key.
func withDataPlaneKey(t *testing.T) clusterOption {
	k, err := wireauth.New([]byte("e2e-data-plane-key-0123456789abcdef"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return func(c *clusterConfig) { c.auth = k }
}

// withBundles makes every shim, node and client send the messages that
// leave together for one peer as one bundle datagram.
func withBundles() clusterOption { return func(c *clusterConfig) { c.bundle = true } }

// withSwitchSpine serves the spine layer with software switches, each
// programmed by its controller over P4Runtime (internal/testing/switchtest).
func withSwitchSpine() clusterOption { return func(c *clusterConfig) { c.switchSpine = true } }

func withAppendOnlyRedis() clusterOption {
	return func(c *clusterConfig) { c.redisOpts = append(c.redisOpts, redistest.WithAppendOnly()) }
}

// cluster is a DistCache cluster in the test process (clustertest): one
// real redis-server and one shim per storage shard, a spine layer on its own
// ring and a leaf layer bound to the storage racks (DistCache §3), all on
// loopback UDP.
type cluster struct {
	*clustertest.Cluster
	t   *testing.T
	cfg clusterConfig
}

func newCluster(t *testing.T, opts ...clusterOption) *cluster {
	t.Helper()
	cfg := clusterConfig{racks: 2, shardsPerRack: 1, spineNodes: 2, insertEvery: 20 * time.Millisecond}
	for _, o := range opts {
		o(&cfg)
	}
	cc := clustertest.Start(t, clustertest.Config{
		Name: "e2e", Racks: cfg.racks, ShardsPerRack: cfg.shardsPerRack, Spine: cfg.spineNodes,
		RedisOptions: cfg.redisOpts,
		SwitchSpine:  cfg.switchSpine,
		Switch: switchtest.Config{Interval: cfg.insertEvery, Controller: func(c *cacheswitch.Config) {
			c.Capacity, c.HotThreshold = 32, 3
		}},
		Shim: func(c *shim.Config) {
			c.InvalidateTimeout = time.Second
			c.Transport.Auth, c.Transport.Bundle, c.Transport.Replay = cfg.auth, cfg.bundle, transport.ReplayRequire
		},
		Node: func(c *cachenode.Config) {
			c.Transport.Auth, c.Transport.Bundle, c.Transport.Replay = cfg.auth, cfg.bundle, transport.ReplayRequire
			c.Capacity, c.Interval = 32, cfg.insertEvery
			// A small sketch: the test has 200 keys, and a reset per 20 ms
			// interval of the default 4 × 65536 counters is slow under -race.
			c.Detector = hotkey.Config{Threshold: 3, SketchWidth: 1024, BloomBits: 4096}
		},
	})
	return &cluster{Cluster: cc, t: t, cfg: cfg}
}

// failNode marks member failed in the map, then stops its process.
func (c *cluster) failNode(member string) netip.AddrPort {
	c.t.Helper()
	if err := c.SetState(member, partmap.Failed); err != nil {
		c.t.Fatal(err)
	}
	addr, err := c.StopNode(member)
	if err != nil {
		c.t.Fatal(err)
	}
	return addr
}

// restoreNode starts a fresh process for member on its old address (empty
// cache), then marks it active again.
func (c *cluster) restoreNode(member string, addr netip.AddrPort) {
	c.t.Helper()
	if err := c.StartNode(member, addr); err != nil {
		c.t.Fatal(err)
	}
	if err := c.SetState(member, partmap.Active); err != nil {
		c.t.Fatal(err)
	}
}

// newClient returns a client routed by the current map.
func (c *cluster) newClient() *client.Client {
	return c.NewClient(client.Config{AttemptTimeout: 500 * time.Millisecond, Transport: transport.Config{Auth: c.cfg.auth, Bundle: c.cfg.bundle, Replay: transport.ReplayRequire}})
}

// spineMember returns the name of spine member i.
func (c *cluster) spineMember(i int) string { return c.Members(0)[i] }

// switchHits sums the hits the switches served.
func (c *cluster) switchHits() uint64 {
	var n uint64
	for _, sw := range c.Switches() {
		n += sw.Switch().Stats().Hits.Load()
	}
	return n
}

// nodeStats sums the node counters.
func (c *cluster) nodeStats() (hits, parked, malformed uint64) {
	for _, n := range c.Nodes() {
		st := n.Stats()
		hits += st.Hits
		parked += st.Parked
		malformed += st.Transport.Malformed
	}
	return hits, parked, malformed
}

// macRejected counts the datagrams every node and shim dropped for a
// missing or bad MAC, a stamp the replay filter refused, or no stamp.
func (c *cluster) macRejected() uint64 {
	var n uint64
	add := func(st transport.Stats) {
		for i, r := range st.MACRejected {
			n += r + st.ReplayRejected[i] + st.Unstamped[i]
		}
	}
	for _, nd := range c.Nodes() {
		add(nd.Stats().Transport)
	}
	for _, sh := range c.Shims {
		add(sh.Stats().Transport)
	}
	return n
}

// bundlesIn counts the bundles every node and shim received.
func (c *cluster) bundlesIn() uint64 {
	var n uint64
	for _, nd := range c.Nodes() {
		n += nd.Stats().Transport.BundlesIn
	}
	for _, sh := range c.Shims {
		n += sh.Stats().Transport.BundlesIn
	}
	return n
}

func (c *cluster) String() string {
	return fmt.Sprintf("%d racks × %d shards, %d spine + %d leaf nodes", c.cfg.racks, c.cfg.shardsPerRack, c.cfg.spineNodes, c.cfg.racks)
}

// setCopies publishes the next map version with copies as its decided
// copies (partmap.Map.WithCopies).
func (c *cluster) setCopies(copies ...partmap.KeyCopies) {
	c.t.Helper()
	next, changed, err := c.Placement().Map().WithCopies(copies)
	if err != nil {
		c.t.Fatal(err)
	}
	if changed {
		c.Publish(next)
	}
}

// owners names key's candidates under the current map.
func (c *cluster) owners(key string) []string {
	p := c.Placement()
	var out []string
	for _, cd := range p.Candidates(key, nil) {
		out = append(out, p.Map().Layers[cd.Layer].Members[cd.Member].Name)
	}
	return out
}

// cachedAt names the running nodes that hold a valid copy of key.
func (c *cluster) cachedAt(key string) []string {
	var out []string
	for name, n := range c.Nodes() {
		if _, _, valid, ok := n.Cached(key); ok && valid {
			out = append(out, name)
		}
	}
	return out
}
