package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/standalone/control"
)

// buildDistcache builds the distcache binary: `up` starts the cluster by
// running its own executable, which in a test would be the test binary.
func buildDistcache(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "distcache")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("cannot build distcache: %v\n%s", err, out)
	}
	return bin
}

func run(t testing.TB, bin string, args ...string) (string, error) {
	t.Helper()
	out, err := exec.CommandContext(context.WithoutCancel(t.Context()), bin, args...).CombinedOutput()
	return string(out), err
}

// status is `distcache status --run-dir runDir --json`, decoded.
func status(t testing.TB, bin, runDir string) control.Status {
	t.Helper()
	out, err := run(t, bin, "status", "--run-dir", runDir, "--json")
	if err != nil {
		t.Fatalf("status: %v\n%s", err, out)
	}
	var st control.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	return st
}

const smallCluster = `apiVersion: distcache.io/v1alpha1
kind: CacheCluster
metadata: {name: cli}
spec:
  storage: {racks: 2, shardsPerRack: 1}
  layers:
    - {name: spine, nodes: 2}
    - {name: leaf, boundToRacks: true}
`

// clusterFile writes spec as a cluster file in a directory of its own and
// returns it with a run directory beside it; the cluster of that run
// directory is stopped when the test ends.
func clusterFile(t *testing.T, bin, spec string) (file, runDir string) {
	t.Helper()
	dir := t.TempDir()
	file, runDir = filepath.Join(dir, "cluster.yaml"), filepath.Join(dir, "run")
	if err := os.WriteFile(file, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = run(t, bin, "down", "--run-dir", runDir) })
	return file, runDir
}

// TestUpStatusDown runs `distcache up` in the background on a small cluster
// file, reads it with `distcache status`, and stops it with `distcache
// down`, after which none of its processes may be left. Its gateway
// requires AUTH over TLS (--gateway-users-dir, --gateway-tls-cert and
// --gateway-tls-key): it becomes ready all the same (its /healthz is
// plain HTTP on its metrics address), up and status say how to reach it,
// and go-redis reaches it only over TLS and as the user of the directory.
func TestUpStatusDown(t *testing.T) {
	bin := buildDistcache(t)
	file, runDir := clusterFile(t, bin, smallCluster)
	users, cert, key, pool := gatewayUsersAndTLS(t)
	gatewayFlags := []string{"--gateway-users-dir", users, "--gateway-tls-cert", cert, "--gateway-tls-key", key}
	out, err := run(t, bin, append([]string{"up", "-f", file, "--run-dir", runDir}, gatewayFlags...)...)
	if err != nil {
		t.Fatalf("up: %v\n%s", err, out)
	}
	const secureGateway = " --tls --cacert CA_FILE --user USER --askpass (the Redis-compatible gateway, over TLS, AUTH required; docs/gateway.md)"
	if !strings.Contains(out, "cluster cli Ready: 2 redis-servers, 2 storage shims, 4 cache nodes (spine 2, leaf 2), 1 control loop, 1 gateway, map version 1") ||
		!strings.Contains(out, secureGateway) {
		t.Fatalf("up printed:\n%s", out)
	}
	st := status(t, bin, runDir)
	if st.Cluster != "cli" || st.Phase != control.Ready || len(st.Processes) != 10 || st.Persistence != "aof-everysec" {
		t.Fatalf("status: %s %s with %d processes, persistence %q; want cli Ready with 10, aof-everysec (the default)",
			st.Cluster, st.Phase, len(st.Processes), st.Persistence)
	}
	var gw control.Process
	for _, p := range st.Processes {
		if p.Name == "cli-gateway" {
			gw = p
		}
	}
	if !gw.Ready || !gw.Auth || !gw.TLS {
		t.Fatalf("gateway in status --json: %+v; want ready, auth and tls", gw)
	}
	checkGatewayAuthTLS(t, gw.Addr, pool)
	if out, err := run(t, bin, "up", "-f", file, "--run-dir", runDir); err == nil || !strings.Contains(out, "already running") {
		t.Fatalf("a second up: %v\n%s", err, out)
	}
	if out, err := run(t, bin, "status", "--run-dir", runDir); err != nil || !strings.Contains(out, "cli-spine-1") || !strings.Contains(out, "cli-gateway") ||
		!strings.Contains(out, "persistence aof-everysec: append-only files in "+filepath.Join(runDir, "redis", "<shard>")) || !strings.Contains(out, secureGateway) {
		t.Fatalf("status: %v\n%s", err, out)
	}
	out, err = run(t, bin, "down", "--run-dir", runDir)
	if err != nil || !strings.Contains(out, "nothing left running") {
		t.Fatalf("down: %v\n%s", err, out)
	}
	for _, p := range st.Processes {
		if alive(p.PID) {
			t.Errorf("%s (pid %d) still running after down", p.Name, p.PID)
		}
	}
	if alive(st.PID) {
		t.Errorf("the cluster's own process (pid %d) still running after down", st.PID)
	}
}

// TestDownUpKeepsRedisData writes to a shard's redis-server, stops the
// cluster with `distcache down` and starts it again with `up` on the same
// run directory: the append-only file (appendOnly everysec by default)
// brings the data back.
func TestDownUpKeepsRedisData(t *testing.T) {
	bin := buildDistcache(t)
	file, runDir := clusterFile(t, bin, smallCluster)
	redisOf := func() *redis.Client {
		t.Helper()
		if out, err := run(t, bin, "up", "-f", file, "--run-dir", runDir); err != nil {
			t.Fatalf("up: %v\n%s", err, out)
		}
		st := status(t, bin, runDir)
		for _, p := range st.Processes {
			if p.Name == "cli-rack-1-0-redis" {
				rdb := redis.NewClient(&redis.Options{Addr: p.Addr, MaxRetries: -1})
				t.Cleanup(func() { _ = rdb.Close() })
				return rdb
			}
		}
		t.Fatalf("no process cli-rack-1-0-redis in %+v", st.Processes)
		return nil
	}
	if err := redisOf().Set(t.Context(), "k", "before down", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, bin, "down", "--run-dir", runDir); err != nil {
		t.Fatalf("down: %v\n%s", err, out)
	}
	if got, err := redisOf().Get(t.Context(), "k").Result(); err != nil || got != "before down" {
		t.Fatalf("GET k after down and up: %q, %v; want %q", got, err, "before down")
	}
}

// TestUpRefusesInvalidSpec checks that up prints the API server's message
// for an invalid spec (the messages themselves are compared with a real
// API server in api/v1alpha1's parity test) and starts nothing.
func TestUpRefusesInvalidSpec(t *testing.T) {
	runDir := filepath.Join(t.TempDir(), "run")
	_, err := runCommand(t, "up", "-f", "../../standalone/manifest/testdata/invalid.yaml", "--run-dir", runDir)
	want := `CacheCluster.distcache.io "broken" is invalid: [spec.storage.racks: Invalid value: 0: spec.storage.racks in body should be greater than or equal to 1, ` +
		`spec.layers[0]: Invalid value: nodes is required unless the layer is bound to storage racks (boundToRacks: true)]`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("up: %v\nwant the API server's message %s", err, want)
	}
	if _, err := os.Stat(runDir); !os.IsNotExist(err) {
		t.Errorf("up created the run directory for an invalid spec")
	}
}
