package gateway_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/distcache/distcache/gateway"
)

// jedisVersion is the Jedis the Makefile builds the check with
// (JEDIS_VERSION), for a test run without make.
const jedisVersion = "7.4.1"

// jedisClassPath is the Java class path of the Jedis check
// (jediscluster/): the file DISTCACHE_JEDIS_CLASSPATH names holds it, or
// the one `make jedis-cluster` writes, in a directory named after Jedis'
// version and a hash of the check's sources, as the Makefile names it.
func jedisClassPath(t *testing.T) string {
	t.Helper()
	p := os.Getenv("DISTCACHE_JEDIS_CLASSPATH")
	if p == "" {
		srcs, err := filepath.Glob(filepath.Join("jediscluster", "src", "main", "java", "org", "distcache", "jediscluster", "*.java"))
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(srcs)
		h := sha256.New()
		for _, f := range append([]string{filepath.Join("jediscluster", "pom.xml")}, srcs...) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			h.Write(b)
		}
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatal(err)
		}
		p = filepath.Join(home, ".cache", "distcache", "jedis-cluster", jedisVersion+"-"+hex.EncodeToString(h.Sum(nil))[:12], "classpath")
	}
	cp, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("no Jedis check (`make jedis-cluster` builds it with Maven): %v", err)
	}
	return strings.TrimSpace(string(cp))
}

// TestJedisCluster runs Jedis's JedisCluster, unmodified, against two
// gateways of one cluster with a cluster face, from one of them
// (jediscluster/Check.java): it finds both, and each gateway runs at
// least the SETs and GETs of the keys of its slots; every key written is
// then read through either gateway.
func TestJedisCluster(t *testing.T) {
	cp := jedisClassPath(t)
	java, err := exec.LookPath("java")
	if err != nil {
		t.Fatalf("no java (`make jedis-cluster` installs openjdk-17-jdk-headless): %v", err)
	}
	addrs, servers := startClusterGateways(t, 2)
	const keys = 100
	before := []uint64{servers[0].Stats().Commands, servers[1].Stats().Commands}
	host, port, _ := net.SplitHostPort(addrs[1])
	cmd := exec.CommandContext(t.Context(), java, "-cp", cp, "org.distcache.jediscluster.Check", host, port, "2", strconv.Itoa(keys))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("Jedis: %v\n%s\n%s", err, out, stderr.String())
	}
	per := make([]uint64, 2)
	names := make([]string, keys)
	for i := range keys {
		names[i] = "jedis:spread:" + strconv.Itoa(i)
		if gateway.KeySlot([]byte(names[i])) < gateway.ClusterSlots/2 {
			per[0] += 2
		} else {
			per[1] += 2
		}
	}
	for i, s := range servers {
		if got := s.Stats().Commands - before[i]; per[i] == 0 || got < per[i] {
			t.Errorf("gateway %s ran %d commands, want at least the %d SETs and GETs of its slots' keys", addrs[i], got, per[i])
		}
	}
	for _, a := range addrs {
		vals, err := redisClient(t, a, 2).MGet(t.Context(), names...).Result()
		for i, v := range vals {
			if err != nil || v != names[i] {
				t.Fatalf("MGET through %s: %s = %v (%v), want every key through every gateway", a, names[i], v, err)
			}
		}
	}
}
