package gateway_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// redisPyVersion is the redis-py the Makefile installs (REDIS_PY_VERSION),
// for a test run without make.
const redisPyVersion = "8.1.0"

// redisPy is the python of redis-py's virtualenv: DISTCACHE_REDIS_PY, or
// where `make redis-py` creates it.
func redisPy(t *testing.T) string {
	t.Helper()
	py := os.Getenv("DISTCACHE_REDIS_PY")
	if py == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatal(err)
		}
		py = filepath.Join(home, ".cache", "distcache", "redis-py", redisPyVersion, "bin", "python")
	}
	if _, err := os.Stat(py); err != nil {
		t.Fatalf("no redis-py (`make redis-py` installs it from PyPI): %v", err)
	}
	return py
}

// TestRedisPy runs redis-py, a client that is not Go, unmodified against
// the gateway (testdata/redispy_conformance.py, RESP2 and RESP3): the
// script asserts every result and exits non-zero on the first wrong one.
func TestRedisPy(t *testing.T) {
	addr, _ := startGateway(t)
	host, port, _ := net.SplitHostPort(addr)
	out, err := exec.CommandContext(t.Context(), redisPy(t), filepath.Join("testdata", "redispy_conformance.py"), host, port).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("redis-py conformance: %v\n%s", err, out)
	}
}

// TestRedisPyCluster runs redis-py's RedisCluster, unmodified, against two
// gateways of one cluster with a cluster face, from one of them
// (testdata/redispy_cluster.py, RESP2 and RESP3): it finds both, sends
// each key to the gateway of its slot, splits MGET by slot and pipelines.
func TestRedisPyCluster(t *testing.T) {
	addrs, _ := startClusterGateways(t, 2)
	host, port, _ := net.SplitHostPort(addrs[1])
	out, err := exec.CommandContext(t.Context(), redisPy(t), filepath.Join("testdata", "redispy_cluster.py"), host, port, "2").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("redis-py cluster: %v\n%s", err, out)
	}
}
