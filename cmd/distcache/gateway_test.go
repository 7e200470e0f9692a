package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/standalone/control"
	"github.com/distcache/distcache/standalone/plan"
)

// TestUpRunsGateway runs `distcache up` on a small cluster and talks to
// the gateway it starts with go-redis, at the address `distcache status
// --json` gives: a value set is read back, DEL counts the key it deleted,
// a missing key is redis.Nil, and INFO distcache names the cluster and its
// map version. `up --gateway=false` runs the same cluster without it.
func TestUpRunsGateway(t *testing.T) {
	bin := buildDistcache(t)
	file, runDir := clusterFile(t, bin, smallCluster)
	out, err := run(t, bin, "up", "-f", file, "--run-dir", runDir)
	if err != nil {
		t.Fatalf("up: %v\n%s", err, out)
	}
	st := status(t, bin, runDir)
	var gw control.Process
	for _, p := range st.Processes {
		if p.Kind == string(plan.Gateway) {
			gw = p
		}
	}
	if gw.Name != "cli-gateway" || gw.Addr == "" || !gw.Ready {
		t.Fatalf("gateway in the status: %+v; want cli-gateway, ready, with its Redis address", gw)
	}
	if !strings.Contains(out, "redis:  redis-cli -h 127.0.0.1 -p ") {
		t.Errorf("up printed no redis-cli line for the gateway:\n%s", out)
	}

	rdb := redis.NewClient(&redis.Options{Addr: gw.Addr, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := t.Context()
	if err := rdb.Set(ctx, "greeting", "hello", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if got, err := rdb.Get(ctx, "greeting").Result(); err != nil || got != "hello" {
		t.Fatalf("GET after SET: %q, %v; want hello", got, err)
	}
	if n, err := rdb.Del(ctx, "greeting").Result(); err != nil || n != 1 {
		t.Fatalf("DEL: %d, %v; want 1", n, err)
	}
	if got, err := rdb.Get(ctx, "greeting").Result(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET after DEL: %q, %v; want redis.Nil", got, err)
	}
	info, err := rdb.Info(ctx, "distcache").Result()
	if err != nil || !strings.Contains(info, "cluster:cli") || !strings.Contains(info, "map_version:") {
		t.Fatalf("INFO distcache: %v\n%s", err, info)
	}
	if out, err := run(t, bin, "down", "--run-dir", runDir); err != nil {
		t.Fatalf("down: %v\n%s", err, out)
	}

	out, err = run(t, bin, "up", "-f", file, "--run-dir", runDir, "--gateway=false")
	if err != nil {
		t.Fatalf("up --gateway=false: %v\n%s", err, out)
	}
	st = status(t, bin, runDir)
	for _, p := range st.Processes {
		if p.Kind == string(plan.Gateway) {
			t.Errorf("up --gateway=false runs %+v", p)
		}
	}
	if len(st.Processes) != 9 || strings.Contains(out, "redis-cli") {
		t.Errorf("up --gateway=false: %d processes, want 9 (no gateway); printed:\n%s", len(st.Processes), out)
	}
	if out, err := run(t, bin, "down", "--run-dir", runDir); err != nil {
		t.Fatalf("down: %v\n%s", err, out)
	}
}
