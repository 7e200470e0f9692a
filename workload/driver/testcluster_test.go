package driver

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/dataplane/cachenode"
	"github.com/distcache/distcache/dataplane/shim"
	"github.com/distcache/distcache/hotkey"
	"github.com/distcache/distcache/internal/testing/clustertest"
	"github.com/distcache/distcache/placement/partmap"
)

// Emulated capacities of the test cluster, in work units per second: low,
// so the driver's probe chooses small rates.
const (
	testShardRate = 500
	testNodeRate  = 1000
)

// testCluster is a real DistCache cluster in the test process (clustertest:
// 2 racks × 1 shard, a spine layer of 2 nodes and a leaf layer bound to the
// racks) publishing its partition map to a file as standalone mode does. It
// implements Cluster from the components' Stats. The nodes run no insertion
// loop: InsertHot fills their caches when the test says so.
type testCluster struct {
	*clustertest.Cluster
	t       *testing.T
	mapFile string

	mu     sync.Mutex                // guards killed
	killed map[string]netip.AddrPort // killed members' addresses
}

func newTestCluster(t *testing.T) *testCluster {
	t.Helper()
	mapFile := filepath.Join(t.TempDir(), "map.json")
	cc := clustertest.Start(t, clustertest.Config{
		Name: "drv", Racks: 2, ShardsPerRack: 1, Spine: 2, MapFile: mapFile,
		Shim: func(c *shim.Config) { c.InvalidateTimeout, c.EmulatedRate = time.Second, testShardRate },
		Node: func(c *cachenode.Config) {
			c.Capacity, c.Interval, c.EmulatedRate = 32, -1, testNodeRate
			// A small sketch for a small key space.
			c.Detector = hotkey.Config{Threshold: 2, SketchWidth: 1024, BloomBits: 4096}
		},
	})
	return &testCluster{Cluster: cc, t: t, mapFile: mapFile, killed: map[string]netip.AddrPort{}}
}

// Work implements Cluster from the shims' and nodes' Stats.
func (c *testCluster) Work(context.Context) ([]Work, error) {
	var out []Work
	m := c.Placement().Map()
	nodes := c.Nodes()
	for _, l := range m.Layers {
		for _, mb := range l.Members {
			if n, ok := nodes[mb.Name]; ok {
				out = append(out, Work{Name: mb.Name, Node: true, Layer: l.Name, Units: n.Stats().Work, Capacity: testNodeRate})
			}
		}
	}
	for _, r := range m.Storage.Racks {
		for _, sh := range r.Shards {
			st := c.Shims[sh.Name].Stats()
			out = append(out, Work{Name: sh.Name, Units: st.Work, Capacity: testShardRate,
				Coherence: st.Invalidations + st.UpdatesSent})
		}
	}
	return out, nil
}

// Kill closes member's node, then marks it failed in the map, as the
// control loop does once it notices.
func (c *testCluster) Kill(_ context.Context, member string) error {
	addr, err := c.StopNode(member)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.killed[member] = addr
	c.mu.Unlock()
	return c.SetState(member, partmap.Failed)
}

// Restart starts a fresh node (empty cache) for member on its old address,
// then marks it active again.
func (c *testCluster) Restart(_ context.Context, member string) error {
	c.mu.Lock()
	addr, ok := c.killed[member]
	delete(c.killed, member)
	c.mu.Unlock()
	if !ok {
		return fmt.Errorf("member %s was not killed", member)
	}
	if err := c.StartNode(member, addr); err != nil {
		return err
	}
	return c.SetState(member, partmap.Active)
}

// errInProcess is the error of the failures an in-process node cannot
// have.
var errInProcess = errors.New("the in-process test cluster can only kill and restart nodes")

// Pause implements Cluster: a node in the test process cannot be paused.
func (c *testCluster) Pause(context.Context, string) error { return errInProcess }

// Resume implements Cluster.
func (c *testCluster) Resume(context.Context, string) error { return errInProcess }

// Slow implements Cluster: a node in the test process cannot be slowed.
func (c *testCluster) Slow(context.Context, string, time.Duration) error { return errInProcess }

// Unslow implements Cluster.
func (c *testCluster) Unslow(context.Context, string) error { return errInProcess }

// insertHot runs one insertion interval on every running node.
func (c *testCluster) insertHot(ctx context.Context) {
	for _, n := range c.Nodes() {
		n.InsertHot(ctx)
	}
}

// nodeGets sums the GETs the running nodes received.
func (c *testCluster) nodeGets() uint64 {
	var n uint64
	for _, nd := range c.Nodes() {
		n += nd.Stats().Gets
	}
	return n
}

// redisOf returns a Redis client of key's storage shard.
func (c *testCluster) redisOf(key string) *redis.Client {
	rc := redis.NewClient(&redis.Options{Addr: c.Redis[c.ShardOf(key)].Addr()})
	c.t.Cleanup(func() { _ = rc.Close() })
	return rc
}

// spine returns the spine members' names.
func (c *testCluster) spine() []string { return c.Members(0) }
