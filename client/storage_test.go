package client

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/internal/testing/redistest"
)

// directCluster is a cluster of fakes of one node per layer and one shard
// whose map names a real Redis (Shard.Redis) at redisAddr: its clients
// read misses from it themselves.
func directCluster(t *testing.T, redisAddr string) *cluster {
	t.Helper()
	c := newCluster(t)
	m := c.m.Clone()
	m.Storage.Racks[0].Shards[0].Redis = redisAddr
	c.m, c.p = m, compile(t, m)
	return c
}

// closedAddr is a loopback address where nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()
	var lc net.ListenConfig
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// TestDirectReads checks reads where the client reads storage itself
// (spec.dataPlane.directReads): a node's copy is a hit; a node without one
// leaves the read to the client, which reads the shard's Redis and not the
// shim; an absent key is ErrNotFound; with Redis unreachable the read asks
// the shim; a map without Redis addresses keeps the old path.
func TestDirectReads(t *testing.T) {
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	if err := rdb.Set(t.Context(), "k", "from-redis", 0).Err(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name         string
		redis        string // Shard.Redis: "up", "down" or none
		hit          bool   // the nodes hold a copy
		key          string
		want         string
		wantErr      error
		wantFlag     wire.Flag // on the node's GET
		wantStorage  uint64
		wantFailures uint64
		wantShimGets int
	}{
		{name: "copy at the node", redis: "up", hit: true, key: "k", want: "cached:", wantFlag: wire.FlagDirect},
		{name: "no copy: read from Redis", redis: "up", key: "k", want: "from-redis", wantFlag: wire.FlagDirect, wantStorage: 1},
		{name: "no copy, no key", redis: "up", key: "absent", wantErr: ErrNotFound, wantFlag: wire.FlagDirect, wantStorage: 1},
		{name: "Redis unreachable: the shim", redis: "down", key: "k", want: "from-shim", wantFlag: wire.FlagDirect,
			wantFailures: 1, wantShimGets: 1},
		{name: "no Redis in the map: through the node", key: "k", want: "cached:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c *cluster
			switch tt.redis {
			case "up":
				c = directCluster(t, srv.Addr())
			case "down":
				c = directCluster(t, closedAddr(t))
			default:
				c = newCluster(t)
			}
			c.store("k", "from-shim")
			for _, row := range c.nodes {
				row[0].set(nodeHit(tt.hit || tt.redis == ""))
			}
			cl := newTestClient(t, c.p, withAttempts(2), withAskNodes())
			got, err := cl.Get(t.Context(), tt.key)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && string(got[:min(len(got), len(tt.want))]) != tt.want) {
				t.Fatalf("Get(%s) = %q, %v; want %q, %v", tt.key, got, err, tt.want, tt.wantErr)
			}
			var flags wire.Flag
			for _, row := range c.nodes {
				if row[0].requests() > 0 {
					flags = row[0].lastFlags()
				}
			}
			if flags != tt.wantFlag {
				t.Errorf("the node's GET had flags %#x, want %#x", flags, tt.wantFlag)
			}
			s := cl.Stats()
			if s.StorageReads != tt.wantStorage || s.StorageFailures != tt.wantFailures {
				t.Errorf("StorageReads %d, StorageFailures %d; want %d, %d", s.StorageReads, s.StorageFailures, tt.wantStorage, tt.wantFailures)
			}
			if n := len(c.shims[0][0].requests()); n != tt.wantShimGets {
				t.Errorf("the shim got %d requests, want %d", n, tt.wantShimGets)
			}
		})
	}
}

func withAskNodes() clientOpt { return func(c *Config) { c.AskNodesForColdKeys = true } }

// TestColdReadsSkipTheNodes checks warm reads (warm.go): where the client
// reads storage itself, the first read of a key goes to Redis without
// asking a node, even one that holds a copy; the next read of it in the
// same interval (the detector's threshold starts at 2) asks the node and
// hits; in the next interval, after it was reported hot, the key is warm
// on its first read; after an interval in which it was read once only it
// is cold again.
func TestColdReadsSkipTheNodes(t *testing.T) {
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	if err := rdb.Set(t.Context(), "k", "from-redis", 0).Err(); err != nil {
		t.Fatal(err)
	}
	c := directCluster(t, srv.Addr())
	for _, row := range c.nodes {
		row[0].set(nodeHit(true))
	}
	cl := newTestClient(t, c.p)
	now := fakeClock(cl)
	nodeRequests := func() (n int) {
		for _, row := range c.nodes {
			n += row[0].requests()
		}
		return n
	}
	steps := []struct {
		name      string
		advance   time.Duration
		want      string
		wantNodes int // node requests so far
	}{
		{name: "first read: Redis", want: "from-redis", wantNodes: 0},
		{name: "second read: the node", want: "cached:", wantNodes: 1},
		{name: "next interval: warm from the last one", advance: warmInterval, want: "cached:", wantNodes: 2},
		{name: "after an interval of one read: cold", advance: warmInterval, want: "from-redis", wantNodes: 2},
	}
	for _, st := range steps {
		now.Add(int64(st.advance))
		got, err := cl.Get(t.Context(), "k")
		if err != nil || string(got[:min(len(got), len(st.want))]) != st.want {
			t.Fatalf("%s: Get = %q, %v; want %q", st.name, got, err, st.want)
		}
		if n := nodeRequests(); n != st.wantNodes {
			t.Fatalf("%s: the nodes got %d requests, want %d", st.name, n, st.wantNodes)
		}
	}
}

// TestDirectReadsMany checks GetMany where no node holds a copy: every key
// is read from Redis, its own value or ErrNotFound, none through the shim.
func TestDirectReadsMany(t *testing.T) {
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	keys := []string{"a", "b", "absent", "c"}
	for _, k := range []string{"a", "b", "c"} {
		if err := rdb.Set(t.Context(), k, "v-"+k, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	c := directCluster(t, srv.Addr())
	for _, row := range c.nodes {
		row[0].set(nodeHit(false))
	}
	cl := newTestClient(t, c.p)
	res, errs := make([]Result, len(keys)), make([]error, len(keys))
	cl.GetMany(context.Background(), keys, res, errs)
	for i, k := range keys {
		switch {
		case k == "absent":
			if !errors.Is(errs[i], ErrNotFound) {
				t.Errorf("%s: %q, %v; want ErrNotFound", k, res[i].Value, errs[i])
			}
		case errs[i] != nil || string(res[i].Value) != "v-"+k || res[i].Hit:
			t.Errorf("%s: %q hit %v, %v; want %q from storage", k, res[i].Value, res[i].Hit, errs[i], "v-"+k)
		}
	}
	if s := cl.Stats(); s.StorageReads != uint64(len(keys)) {
		t.Errorf("StorageReads %d, want %d", s.StorageReads, len(keys))
	}
	if n := len(c.shims[0][0].requests()); n != 0 {
		t.Errorf("the shim got %d requests, want 0", n)
	}
}
