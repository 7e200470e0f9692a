package gateway_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/gateway"
	"github.com/distcache/distcache/internal/testing/clustertest"
)

// startClusterGateways starts n gateways in front of one real cluster,
// each with a cluster face listing them all (FixedPeers), and returns
// their addresses in the faces' order (sorted) and the servers.
func startClusterGateways(t *testing.T, n int) ([]string, []*gateway.Server) {
	t.Helper()
	c := clustertest.Start(t, smallCluster)
	peers := make(gateway.FixedPeers, n)
	lns := make([]net.Listener, n)
	for i := range n {
		lns[i] = listenLoopback(t)
		peers[i] = netip.MustParseAddrPort(lns[i].Addr().String())
	}
	slices.SortFunc(lns, func(a, b net.Listener) int {
		return netip.MustParseAddrPort(a.Addr().String()).Compare(netip.MustParseAddrPort(b.Addr().String()))
	})
	addrs, servers := make([]string, n), make([]*gateway.Server, n)
	for i, ln := range lns {
		cfg := gatewayConfig(c)
		cfg.Cluster = &gateway.ClusterFace{Announce: netip.MustParseAddrPort(ln.Addr().String()), Peers: peers}
		servers[i], addrs[i] = serveGatewayOn(t, cfg, ln)
	}
	return addrs, servers
}

// clusterClient is a go-redis ClusterClient that starts from seed and
// speaks protocol proto; with readOnly it sends READONLY to every node.
// route, when set, records the node each SET went to.
func clusterClient(t *testing.T, seed string, proto int, readOnly bool, route *routes) *redis.ClusterClient {
	t.Helper()
	opts := &redis.ClusterOptions{Addrs: []string{seed}, Protocol: proto, ReadOnly: readOnly, MaxRetries: -1, ReadTimeout: time.Minute}
	if route != nil {
		opts.NewClient = func(o *redis.Options) *redis.Client {
			c := redis.NewClient(o)
			c.AddHook(routeHook{addr: o.Addr, r: route})
			return c
		}
	}
	cc := redis.NewClusterClient(opts)
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// routes records the node each key was written through.
type routes struct {
	mu   sync.Mutex
	node map[string]string // key -> address
}

type routeHook struct {
	addr string
	r    *routes
}

func (routeHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (routeHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h routeHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "set" {
			h.r.mu.Lock()
			h.r.node[fmt.Sprint(cmd.Args()[1])] = h.addr
			h.r.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

// keyIn returns a key of prefix whose slot is in [first, last].
func keyIn(prefix string, first, last int) string {
	for i := 0; ; i++ {
		k := prefix + strconv.Itoa(i)
		if s := gateway.KeySlot([]byte(k)); s >= first && s <= last {
			return k
		}
	}
}

// exerciseCluster runs commands of every kind through cc: each on keys of
// different slots, MGET across slots (a Redis Cluster would refuse it:
// any gateway serves any key), a pipeline, and a key of every slot range.
func exerciseCluster(t *testing.T, cc *redis.ClusterClient, prefix string) {
	t.Helper()
	ctx := t.Context()
	expect := func(what string, got, want any, err error) {
		t.Helper()
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s = %v (%v), want %v", what, got, err, want)
		}
	}
	k := func(s string) string { return prefix + s }
	for _, name := range []string{"a", "b", "c", "{t}x", "{t}y"} {
		r, err := cc.Set(ctx, k(name), "v-"+name, 0).Result()
		expect("SET "+name, r, "OK", err)
	}
	r, err := cc.Get(ctx, k("b")).Result()
	expect("GET b", r, "v-b", err)
	vals, err := cc.MGet(ctx, k("a"), k("b"), k("c"), k("missing")).Result()
	expect("MGET across slots", vals, []any{"v-a", "v-b", "v-c", nil}, err)
	vals, err = cc.MGet(ctx, k("{t}x"), k("{t}y")).Result()
	expect("MGET of one hash tag", vals, []any{"v-{t}x", "v-{t}y"}, err)
	n, err := cc.Incr(ctx, k("n")).Result()
	expect("INCR", n, 1, err)
	n, err = cc.IncrBy(ctx, k("n"), 41).Result()
	expect("INCRBY", n, 42, err)
	n, err = cc.HSet(ctx, k("h"), "f1", "1", "f2", "2").Result()
	expect("HSET", n, 2, err)
	h, err := cc.HGetAll(ctx, k("h")).Result()
	expect("HGETALL", h, map[string]string{"f1": "1", "f2": "2"}, err)
	cmds, err := cc.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, k("p1"), "1", 0)
		p.Incr(ctx, k("p2"))
		p.Get(ctx, k("p1"))
		return nil
	})
	if err != nil || len(cmds) != 3 || cmds[2].(*redis.StringCmd).Val() != "1" {
		t.Errorf("pipeline: %v (%v), want GET p1 = 1", cmds, err)
	}
	slots, err := cc.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range slots {
		key := keyIn(k("range:"), s.Start, s.End)
		r, err := cc.Set(ctx, key, key, 0).Result()
		expect(fmt.Sprintf("SET of a key in slots %d-%d", s.Start, s.End), r, "OK", err)
		r, err = cc.Get(ctx, key).Result()
		expect("GET of it", r, key, err)
	}
}

// TestGoRedisClusterOneGateway runs go-redis's ClusterClient, unmodified,
// against a gateway with a cluster face, over RESP2 and RESP3 (with
// READONLY): the gateway owns every slot under its node id, CLUSTER INFO
// says the cluster is ok, INFO cluster_enabled:1, and commands of every
// kind work.
func TestGoRedisClusterOneGateway(t *testing.T) {
	addrs, _ := startClusterGateways(t, 1)
	id := gateway.NodeID(netip.MustParseAddrPort(addrs[0]))
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			ctx := t.Context()
			cc := clusterClient(t, addrs[0], proto, proto == 3, nil)
			slots, err := cc.ClusterSlots(ctx).Result()
			if err != nil || len(slots) != 1 || slots[0].Start != 0 || slots[0].End != gateway.ClusterSlots-1 ||
				len(slots[0].Nodes) != 1 || slots[0].Nodes[0].Addr != addrs[0] || slots[0].Nodes[0].ID != id {
				t.Fatalf("CLUSTER SLOTS = %+v (%v), want 0-16383 at %s, id %s", slots, err, addrs[0], id)
			}
			exerciseCluster(t, cc, fmt.Sprintf("one%d:", proto))
			info, err := cc.ClusterInfo(ctx).Result()
			for _, l := range []string{"cluster_state:ok\r\n", "cluster_slots_assigned:16384\r\n", "cluster_known_nodes:1\r\n", "cluster_size:1\r\n"} {
				if err != nil || !strings.Contains(info, l) {
					t.Errorf("CLUSTER INFO = %q (%v), want %q", info, err, l)
				}
			}
			if got, err := cc.Do(ctx, "cluster", "myid").Text(); err != nil || got != id {
				t.Errorf("CLUSTER MYID = %q (%v), want %s", got, err, id)
			}
			if hello, err := redisClient(t, addrs[0], proto).Do(ctx, "hello", proto).Result(); err != nil || !strings.Contains(strings.ReplaceAll(fmt.Sprint(hello), ":", " "), "mode cluster") {
				t.Errorf("HELLO = %v (%v), want mode cluster", hello, err)
			}
			if got, err := cc.Info(ctx, "cluster").Result(); err != nil || !strings.Contains(got, "cluster_enabled:1\r\n") {
				t.Errorf("INFO cluster = %q (%v), want cluster_enabled:1", got, err)
			}
			key := "{user1000}.following"
			if got, err := cc.ClusterKeySlot(ctx, key).Result(); err != nil || got != int64(gateway.KeySlot([]byte(key))) {
				t.Errorf("CLUSTER KEYSLOT = %d (%v), want %d", got, err, gateway.KeySlot([]byte(key)))
			}
		})
	}
}

// TestGoRedisClusterTwoGateways: two gateways of one cluster show the
// same cluster, the slots split between them by address; go-redis's
// ClusterClient, given one of them, sends each key to the gateway of its
// slot, so both serve it; and any key written through one is read
// through either.
func TestGoRedisClusterTwoGateways(t *testing.T) {
	addrs, servers := startClusterGateways(t, 2)
	ctx := t.Context()
	want := []struct{ first, last int }{{0, 8191}, {8192, 16383}}
	for _, a := range addrs {
		slots, err := redisClient(t, a, 2).ClusterSlots(ctx).Result()
		if err != nil || len(slots) != 2 {
			t.Fatalf("CLUSTER SLOTS from %s = %+v (%v), want two ranges", a, slots, err)
		}
		for i, s := range slots {
			if s.Start != want[i].first || s.End != want[i].last || len(s.Nodes) != 1 || s.Nodes[0].Addr != addrs[i] {
				t.Errorf("CLUSTER SLOTS from %s: range %d is %+v, want %d-%d at %s", a, i, s, want[i].first, want[i].last, addrs[i])
			}
		}
		nodes, err := redisClient(t, a, 3).ClusterNodes(ctx).Result()
		if err != nil || !strings.Contains(nodes, " "+a+"@0 myself,master - 0 0 ") || strings.Count(nodes, "\n") != 2 {
			t.Errorf("CLUSTER NODES from %s = %q (%v), want two gateways, itself myself", a, nodes, err)
		}
	}
	before := []uint64{servers[0].Stats().Commands, servers[1].Stats().Commands}
	route := &routes{node: map[string]string{}}
	cc := clusterClient(t, addrs[1], 2, false, route)
	exerciseCluster(t, cc, "two:")
	var keys []string
	for i := range 40 {
		key := "spread:" + strconv.Itoa(i)
		if err := cc.Set(ctx, key, key, 0).Err(); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, key)
	}
	sent := map[string]int{}
	for key, addr := range route.node {
		owner := addrs[0]
		if gateway.KeySlot([]byte(key)) > 8191 {
			owner = addrs[1]
		}
		if addr != owner {
			t.Errorf("SET %s went to %s, want %s, the gateway of its slot", key, addr, owner)
		}
		sent[addr]++
	}
	for i, s := range servers {
		if got := s.Stats().Commands - before[i]; sent[addrs[i]] == 0 || got < uint64(sent[addrs[i]]) {
			t.Errorf("gateway %s ran %d commands; the client sent it %d SETs, want some and all run", addrs[i], got, sent[addrs[i]])
		}
	}
	for _, a := range addrs {
		rc := redisClient(t, a, 2)
		vals, err := rc.MGet(ctx, keys...).Result()
		for i, v := range vals {
			if err != nil || v != keys[i] {
				t.Fatalf("MGET through %s: %s = %v (%v), want every key through every gateway", a, keys[i], v, err)
			}
		}
	}
}
