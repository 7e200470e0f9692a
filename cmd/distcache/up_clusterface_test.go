package main

import (
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/standalone/plan"
)

// TestUpGatewayClusterFace runs `distcache up` on a cluster file whose
// spec.gateway.clusterFace is on: go-redis's ClusterClient, given the
// gateway's address from `distcache status`, finds the gateway alone, at
// that address, owning every slot, and reads back what it writes.
func TestUpGatewayClusterFace(t *testing.T) {
	bin := buildDistcache(t)
	file, runDir := clusterFile(t, bin, smallCluster+"  gateway: {clusterFace: true}\n")
	if out, err := run(t, bin, "up", "-f", file, "--run-dir", runDir); err != nil {
		t.Fatalf("up: %v\n%s", err, out)
	}
	addr := ""
	for _, p := range status(t, bin, runDir).Processes {
		if p.Kind == string(plan.Gateway) {
			addr = p.Addr
		}
	}
	if addr == "" {
		t.Fatal("no gateway in the status")
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}, MaxRetries: -1, ReadTimeout: time.Minute})
	t.Cleanup(func() { _ = cc.Close() })
	ctx := t.Context()
	slots, err := cc.ClusterSlots(ctx).Result()
	if err != nil || len(slots) != 1 || slots[0].Start != 0 || slots[0].End != 16383 || len(slots[0].Nodes) != 1 || slots[0].Nodes[0].Addr != addr {
		t.Fatalf("CLUSTER SLOTS = %+v (%v), want 0-16383 at %s", slots, err, addr)
	}
	for i := range 20 {
		k := "face:" + strconv.Itoa(i)
		if err := cc.Set(ctx, k, k, 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
		if got, err := cc.Get(ctx, k).Result(); err != nil || got != k {
			t.Fatalf("GET %s = %q (%v)", k, got, err)
		}
	}
}
