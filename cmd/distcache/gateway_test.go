package main

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/standalone/control"
	"github.com/distcache/distcache/standalone/plan"
	"github.com/distcache/distcache/workload/driver"
)

// TestUpRunsGateway runs `distcache up` on a small cluster and talks to
// the gateway it starts with go-redis, at the address `distcache status
// --json` gives: a value set is read back, DEL counts the key it deleted,
// a missing key is redis.Nil, and INFO distcache names the cluster and its
// map version; Debian's redis-cli and redis-benchmark work against it, and
// so does `distcache bench --via gateway --modes twemproxy,distcache`.
// `up --gateway=false` runs the same cluster without it.
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
	debianToolsWork(t, gw.Addr)
	benchViaGatewayWorks(t, bin, runDir)
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

// debianToolsWork runs Debian's redis-cli and redis-benchmark against the
// standalone gateway at addr: commands give their results, and
// redis-benchmark's INCRs all land on its counter.
func debianToolsWork(t *testing.T, addr string) {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	cli := func(args ...string) string {
		out, err := exec.CommandContext(t.Context(), "redis-cli", append([]string{"-h", host, "-p", port}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := cli("SET", "tool:k", "v1"); got != "OK" {
		t.Fatalf("redis-cli SET: %q", got)
	}
	if got := cli("APPEND", "tool:k", "-2"); got != "4" {
		t.Fatalf("redis-cli APPEND: %q, want 4", got)
	}
	if got := cli("GET", "tool:k"); got != "v1-2" {
		t.Fatalf("redis-cli GET: %q, want v1-2", got)
	}
	// Without -r every INCR of redis-benchmark hits the key "counter:__rand_int__";
	// -n is a multiple of -P, or it sends whole pipelines past it.
	out, err := exec.CommandContext(t.Context(), "redis-benchmark", "-h", host, "-p", port,
		"-t", "set,get,incr,mset", "-n", "512", "-c", "10", "-P", "16", "--csv").CombinedOutput()
	if err != nil {
		t.Fatalf("redis-benchmark: %v\n%s", err, out)
	}
	for _, test := range []string{`"SET"`, `"GET"`, `"INCR"`, `"MSET (10 keys)"`} {
		if !strings.Contains(string(out), test) {
			t.Errorf("redis-benchmark ran no %s:\n%s", test, out)
		}
	}
	if got := cli("GET", "counter:__rand_int__"); got != "512" {
		t.Errorf("redis-benchmark's counter is %q, want the 512 INCRs it sent", got)
	}
}

// benchViaGatewayWorks runs a short `distcache bench --via gateway` with
// twemproxy beside DistCache against the standalone cluster of runDir.
func benchViaGatewayWorks(t *testing.T, bin, runDir string) {
	t.Helper()
	jsonPath := filepath.Join(t.TempDir(), "report.json")
	out, err := run(t, bin, "bench", "--run-dir", runDir, "--via", "gateway", "--modes", "twemproxy,distcache",
		"--keys", "1000", "--preload", "100", "--rate", "300", "--count", "300", "--duration", "20s",
		"--warmup", "1s", "--write-ratio", "0.1", "--json", jsonPath)
	if err != nil {
		t.Fatalf("bench --via gateway: %v\n%s", err, out)
	}
	var rep driver.Report
	b, err := os.ReadFile(jsonPath)
	if err == nil {
		err = json.Unmarshal(b, &rep)
	}
	if err != nil {
		t.Fatal(err)
	}
	if rep.Config.Via != "gateway" || len(rep.Modes) != 2 || rep.Modes[0].Mode != driver.Twemproxy ||
		rep.Modes[1].Mode != driver.DistCache || rep.LostWrites != 0 || rep.CheckedKeys == 0 {
		t.Fatalf("report: via %q, modes %v, %d lost writes of %d checked\n%s", rep.Config.Via, rep.Modes,
			rep.LostWrites, rep.CheckedKeys, out)
	}
	for _, m := range rep.Modes {
		if m.Ops == 0 || m.Errors != 0 || len(m.Shards) != 2 {
			t.Errorf("%s: %d operations, %d errors, %d shards measured", m.Mode, m.Ops, m.Errors, len(m.Shards))
		}
	}
	if !strings.Contains(out, "through: Redis clients") {
		t.Errorf("the report does not say the operations went through Redis clients:\n%s", out)
	}
}
