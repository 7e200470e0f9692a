package driver

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/workload/redisstore"
	"github.com/distcache/distcache/workload/twemproxy"
)

// countingStore counts what goes through a client.
type countingStore struct {
	*client.Client
	gets, puts *atomic.Uint64
}

func (s countingStore) Get(ctx context.Context, key string) ([]byte, error) {
	s.gets.Add(1)
	return s.Client.Get(ctx, key)
}

func (s countingStore) Put(ctx context.Context, key string, v []byte) error {
	s.puts.Add(1)
	return s.Client.Put(ctx, key, v)
}

// TestRunVia checks that with Config.Via every operation of the modes goes
// through the stores, and that the clients behind them still count the
// hits.
func TestRunVia(t *testing.T) {
	c := newTestCluster(t)
	cfg := testConfig(t, c)
	var gets, puts atomic.Uint64
	cfg.Via = func(cl *client.Client) (Store, error) { return countingStore{cl, &gets, &puts}, nil }
	cfg.ViaName = "counting"
	rep, err := Run(testContext(t), cfg, c)
	if err != nil {
		t.Fatal(err)
	}
	var reads, writes uint64
	for _, m := range rep.Modes {
		checkSane(t, m, 0)
		reads, writes = reads+m.Reads, writes+m.Writes
		if m.Mode == DistCache && m.HitRatio["all"] <= 0 {
			t.Errorf("distcache through the stores: hit ratio %v", m.HitRatio)
		}
	}
	// The stores also carried the preload and the probes and warm-up.
	if gets.Load() < reads || puts.Load() < writes+uint64(cfg.Preload) {
		t.Errorf("stores saw %d gets and %d puts; the windows alone did %d reads and %d writes (+%d preloaded)",
			gets.Load(), puts.Load(), reads, writes, cfg.Preload)
	}
	if rep.Config.Via != "counting" || rep.LostWrites != 0 {
		t.Errorf("via %q, %d lost writes; want counting, 0", rep.Config.Via, rep.LostWrites)
	}
}

// redisCluster is the test cluster as a RedisWorker: its Redis servers'
// commands, read with INFO.
type redisCluster struct{ *testCluster }

func (c redisCluster) RedisWork(ctx context.Context) ([]Work, error) {
	var out []Work
	for name, srv := range c.Redis {
		n, err := redisstore.GetSetCalls(ctx, srv.Addr())
		if err != nil {
			return nil, err
		}
		out = append(out, Work{Name: name, Units: n, Capacity: testShardRate})
	}
	return out, nil
}

// TestRunTwemproxy runs mode twemproxy through a real nutcracker in front of
// the test cluster's real Redis servers, next to DistCache: its keys are
// its own, its loads are the Redis servers' commands, and the read-back
// finds nothing lost either way.
func TestRunTwemproxy(t *testing.T) {
	c := newTestCluster(t)
	var servers []string
	for _, srv := range c.Redis {
		servers = append(servers, srv.Addr())
	}
	p, err := twemproxy.Start(t.Context(), twemproxy.Config{Servers: servers, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop() })
	cfg := testConfig(t, c)
	store := redisstore.New(p.Addr(), cfg.Concurrency)
	defer store.Close()
	cfg.Modes, cfg.Twemproxy = []Mode{DistCache, Twemproxy}, store
	rep, err := Run(testContext(t), cfg, redisCluster{c})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Modes) != 2 || rep.Modes[0].Mode != Twemproxy {
		t.Fatalf("modes %v, want twemproxy first", rep.Modes)
	}
	tw := rep.Modes[0]
	if tw.Ops == 0 || tw.Errors != 0 || tw.NotFound == tw.Reads || len(tw.Shards) != 2 || len(tw.Nodes) != 0 ||
		tw.NormalizedThroughput <= 0 || tw.Bottleneck == "" || tw.HitRatio["all"] != 0 {
		t.Errorf("twemproxy: %+v", tw)
	}
	var units uint64
	for _, s := range tw.Shards {
		units += s.Units
	}
	if units < tw.Ops {
		t.Errorf("twemproxy: the Redis servers served %d GETs and SETs in a window of %d operations", units, tw.Ops)
	}
	if rep.LostWrites != 0 || rep.CheckedKeys == 0 || rep.UncheckedKeys != 0 {
		t.Errorf("%d lost writes in %d keys checked (%d unchecked): %v", rep.LostWrites, rep.CheckedKeys, rep.UncheckedKeys, rep.LostExamples)
	}
}
