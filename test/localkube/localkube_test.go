// Package localkube runs hack/localkube on this machine: a real node comes
// up, runs a pod behind a Service with cluster DNS, and goes down leaving
// the host as it found it (sysctls, addresses, links, mounts, iptables
// chains, network namespaces, host paths), checked by a snapshot of its own.
package localkube

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distcache/distcache/internal/testing/kubetest"
	"github.com/distcache/distcache/internal/testing/poll"
)

const nodeIP = "192.0.2.10"

// script runs hack/localkube/localkube.sh with args and state dir dir.
func script(ctx context.Context, t *testing.T, dir string, args ...string) {
	t.Helper()
	scriptEnv(ctx, t, dir, nil, args...)
}

// scriptEnv runs hack/localkube/localkube.sh with args, state dir dir
// and the variables env (NAME=value): one node unless env says NODES.
func scriptEnv(ctx context.Context, t *testing.T, dir string, env []string, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, filepath.Join(kubetest.RepoRoot(), "hack", "localkube", "localkube.sh"), args...)
	cmd.Env = append(append(os.Environ(), "LOCALKUBE_DIR="+dir, "NODES=1"), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("localkube.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func TestUpRunsPodsAndDownRestoresTheHost(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("localkube needs root")
	}
	assets, err := kubetest.Assets()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "localkube")
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute)
	defer cancel()
	before := hostState(t, dir)

	down := downAtCleanup(ctx, t, dir)
	script(ctx, t, dir, "up")
	k := newKube(ctx, t, dir, assets)
	kubectl := k.do
	if got := kubectl("", "get", "node", "localkube", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`); got != "True" {
		t.Fatalf("node Ready = %q", got)
	}
	if got := kubectl("", "get", "node", "localkube", "-o", `jsonpath={.status.addresses[?(@.type=="InternalIP")].address}`); got != nodeIP {
		t.Fatalf("node address %q, want the TEST-NET address %s", got, nodeIP)
	}
	kubectl(`apiVersion: v1
kind: Pod
metadata: {name: redis, labels: {app: redis}}
spec:
  containers:
  - {name: redis, image: "redis:7.4", imagePullPolicy: Never, command: [redis-server, --port, "6379", --save, "", --protected-mode, "no"]}
---
apiVersion: v1
kind: Service
metadata: {name: redis}
spec:
  selector: {app: redis}
  ports: [{port: 6379}]
`, "apply", "-f", "-")
	kubectl("", "wait", "--for=condition=Ready", "pod/redis", "--timeout=180s")
	clusterIP := kubectl("", "get", "service", "redis", "-o", "jsonpath={.spec.clusterIP}")

	// The Service's name resolves through the cluster DNS, and its address
	// reaches the pod through kube-proxy's rules.
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, net.JoinHostPort(dnsServiceIP, "53"))
	}}
	// Until CoreDNS is Ready its Service has no endpoint, and kube-proxy
	// rejects what is sent to it (EPERM here): wait for an answer.
	poll.Eventually(t, "the Service's name resolved by the cluster DNS", func() (bool, error) {
		addrs, err := r.LookupHost(ctx, "redis.default.svc.cluster.local")
		return err == nil && slices.Contains(addrs, clusterIP), fmt.Errorf("cluster DNS: %v %v, want %s", addrs, err, clusterIP)
	})
	// kube-proxy programs the Service's endpoint soon after the pod is
	// Ready; until then the address leads nowhere.
	poll.Eventually(t, "PING through the Service", func() (bool, error) {
		reply := ping(ctx, net.JoinHostPort(clusterIP, "6379"))
		return reply == "+PONG", fmt.Errorf("reply %q", reply)
	})

	prom := startPrometheus(k)
	installPath(ctx, t, k)
	// The benchmark Job's traffic is within the last minute: every panel
	// has data.
	prom.dashboardsHaveData("default", sample, samplePods)
	quiet, loaded := faultsUnderCheck(k)
	prom.remapsSeen("shop-managed")
	prom.stop()
	t.Logf("remap after a cache-node pod deletion (grace period 1 s), quiet cluster:\n%s", remapReport(quiet))
	t.Logf("the same under the check's workload:\n%s", remapReport(loaded))
	upgradeUnderCheck(k)
	securedStorage(ctx, t, k)

	down()
	after := hostState(t, dir)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s after down:\n%s\nbefore up:\n%s", k, after[k], v)
		}
	}
}

const dnsServiceIP = "198.19.0.10"

// ping sends a Redis PING to addr and returns the reply line, or what
// went wrong.
func ping(ctx context.Context, addr string) string {
	c, err := (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return err.Error()
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(2 * time.Second)); err != nil {
		return err.Error()
	}
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err.Error()
	}
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if err != nil {
		return err.Error()
	}
	return strings.TrimSpace(string(buf[:n]))
}

// downAtCleanup returns a function that brings the localkube of dir down
// once, and makes the test's cleanup call it: down also after an up that
// failed half way.
func downAtCleanup(ctx context.Context, t *testing.T, dir string) func() {
	var once sync.Once
	down := func() { once.Do(func() { script(context.WithoutCancel(ctx), t, dir, "down") }) }
	t.Cleanup(down)
	return down
}
