package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/gateway"
	"github.com/distcache/distcache/standalone/control"
	"github.com/distcache/distcache/workload/driver"
	"github.com/distcache/distcache/workload/redisstore"
	"github.com/distcache/distcache/workload/twemproxy"
)

// What --via names: the operations of NoCache and DistCache go through the
// client library's calls, or through Redis clients of a gateway.
const (
	viaClient  = "client"
	viaGateway = "gateway"
)

// configureVia sets the driver's Via for --via gateway: each of the
// driver's clients serves a gateway of its own on loopback (package
// gateway, the code `distcache gateway` runs), and the operations go to it
// through a pool of Redis connections.
func (o *benchOptions) configureVia() error {
	switch o.via {
	case viaClient, "":
		return nil
	case viaGateway:
	default:
		return fmt.Errorf("cannot run benchmark: --via %q, want %s or %s", o.via, viaClient, viaGateway)
	}
	c := o.cfg.WithDefaults()
	conns := max(1, (c.Concurrency+c.Clients-1)/c.Clients)
	o.cfg.ViaName = viaGateway
	o.cfg.Via = func(cl *client.Client) (driver.Store, error) {
		srv, err := gateway.New(gateway.Config{Store: cl, OpTimeout: c.OpTimeout})
		if err != nil {
			return nil, err
		}
		var lc net.ListenConfig
		ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("cannot listen for the benchmark's gateway: %w", err)
		}
		go func() { _ = srv.Serve(ln) }()
		return redisstore.New(ln.Addr().String(), conns, srv.Close), nil
	}
	return nil
}

// startTwemproxy starts nutcracker in front of the standalone cluster's
// Redis servers for mode twemproxy, if it runs; stop ends it.
func (o *benchOptions) startTwemproxy(ctx context.Context, st *control.Status) (stop func(), err error) {
	if !slices.Contains(o.cfg.Modes, driver.Twemproxy) {
		return func() {}, nil
	}
	servers := twemproxyServers(o.twemproxyServers)
	if len(servers) == 0 && st == nil {
		return nil, errors.New("cannot run mode twemproxy: it needs a standalone cluster (its Redis servers) or --twemproxy-servers")
	}
	if len(servers) == 0 {
		servers = redisServers(st)
	}
	if len(servers) == 0 {
		return nil, errors.New("cannot run mode twemproxy: the cluster lists no Redis servers")
	}
	dir, err := os.MkdirTemp("", "distcache-twemproxy-")
	if err != nil {
		return nil, fmt.Errorf("cannot run mode twemproxy: %w", err)
	}
	p, err := twemproxy.Start(ctx, twemproxy.Config{Servers: addrs(servers), Dir: dir})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	c := o.cfg.WithDefaults()
	store := redisstore.New(p.Addr(), max(1, c.Concurrency))
	o.cfg.Twemproxy = store
	return func() {
		_ = store.Close()
		_ = p.Stop()
		_ = os.RemoveAll(dir)
	}, nil
}

// shardRedis is a storage shard's Redis server.
type shardRedis struct{ shard, addr string }

// redisServers lists the cluster's Redis servers in the status's order.
func redisServers(st *control.Status) []shardRedis {
	var out []shardRedis
	for _, p := range st.Processes {
		if p.Kind == "redis" && p.Addr != "" {
			out = append(out, shardRedis{shard: cmp.Or(p.Shard, strings.TrimSuffix(p.Name, "-redis")), addr: p.Addr})
		}
	}
	return out
}

// twemproxyServers names the servers of --twemproxy-servers
// twemproxy-0, twemproxy-1, … in the loads they are reported with.
func twemproxyServers(addrs []string) []shardRedis {
	out := make([]shardRedis, len(addrs))
	for i, a := range addrs {
		out[i] = shardRedis{shard: fmt.Sprintf("twemproxy-%d", i), addr: a}
	}
	return out
}

func addrs(rs []shardRedis) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.addr
	}
	return out
}

// RedisWork counts, per shard, the GET and SET commands its Redis served
// (INFO commandstats), with the shard's emulated capacity: the load of
// mode twemproxy, whose operations reach Redis past the shims.
func (s standaloneCluster) RedisWork(ctx context.Context) ([]driver.Work, error) {
	st, err := s.c.Status(ctx)
	if err != nil {
		return nil, err
	}
	capacity := map[string]float64{}
	for _, p := range st.Processes {
		if p.Kind == "shim" {
			capacity[p.Shard] = p.Capacity
		}
	}
	servers := twemproxyServers(s.twemproxy)
	if len(servers) == 0 {
		servers = redisServers(&st)
	}
	var out []driver.Work
	for _, r := range servers {
		n, err := redisstore.GetSetCalls(ctx, r.addr)
		if err != nil {
			return nil, fmt.Errorf("cannot count the commands of %s: %w", r.shard, err)
		}
		out = append(out, driver.Work{Name: r.shard, Units: n, Capacity: capacity[r.shard]})
	}
	return out, nil
}
