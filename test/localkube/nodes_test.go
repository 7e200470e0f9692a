package localkube

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/distcache/distcache/internal/buildinfo"
	"github.com/distcache/distcache/internal/testing/httpget"
	"github.com/distcache/distcache/internal/testing/kubetest"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/operator/controller/cachecluster"
)

// spread is a CacheCluster over the three nodes: two layers of three
// cache nodes (a spine, and a leaf bound to three racks) and three Redis
// shards on claims.
const (
	spread         = "spread"
	spreadPods     = 10 // 3 spine, 3 leaf, 3 storage, 1 gateway
	spreadManifest = `apiVersion: distcache.io/v1alpha1
kind: CacheCluster
metadata:
  name: spread
spec:
  storage:
    mode: managed
    racks: 3
    shardsPerRack: 1
    appendOnly: everysec
    persistence: {size: 1Gi}
  networkPolicy: {enabled: true}
  layers:
    - name: spine
      nodes: 3
    - name: leaf
      boundToRacks: true
`
)

// threeNodes are the nodes of `NODES=3 localkube.sh up`
// (hack/localkube/nodes.sh): name, address, zone.
var threeNodes = []struct{ name, ip, zone string }{
	{"lk-node-1", "198.51.100.11", "zone-a"},
	{"lk-node-2", "198.51.100.12", "zone-b"},
	{"lk-node-3", "198.51.100.13", "zone-a"},
}

func TestThreeNodesSpreadACacheClusterAndDownRestoresTheHost(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("localkube needs root")
	}
	assets, err := kubetest.Assets()
	if err != nil {
		t.Fatal(err)
	}
	// A short directory: containerd's socket is under it, and a Unix
	// socket's path has at most 107 bytes.
	base, err := os.MkdirTemp("", "localkube3-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	dir := filepath.Join(base, "state")
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	before := hostState(t, dir)

	down := downAtCleanup(ctx, t, dir)
	start := time.Now()
	scriptEnv(ctx, t, dir, []string{"NODES=3", "NETPOL=1"}, "up")
	t.Logf("NODES=3 NETPOL=1 up: %v", time.Since(start).Round(100*time.Millisecond))
	k := newKube(ctx, t, dir, assets)
	nodesAreZoned(t, k)

	script(ctx, t, dir, "load", imageArchive(ctx, t, t.TempDir(), buildinfo.Image))
	helmInstall(ctx, t, k.kubeconfig())
	k.do(spreadManifest, "apply", "-f", "-")
	k.do("", "wait", "--for=condition=Ready", "cachecluster/"+spread, "--timeout=240s")
	k.awaitHealed(spread, spreadPods)
	pods := k.dataPlanePods(spread)
	if len(pods) != spreadPods {
		t.Fatalf("%d Ready pods of %s, want %d: %v", len(pods), spread, spreadPods, slices.Sorted(maps.Keys(pods)))
	}
	perNode := map[string][]string{}
	for name, p := range pods {
		perNode[p.Spec.NodeName] = append(perNode[p.Spec.NodeName], name)
	}
	if len(perNode) < 2 {
		t.Fatalf("every pod of %s on one node: %v", spread, perNode)
	}
	t.Logf("pods per node: %v", perNode)

	client := policiesEnforced(ctx, t, k, pods)
	crossNodeRequests(ctx, t, k, pods, client)
	cutAndStart(ctx, t, dir, pods)

	start = time.Now()
	down()
	t.Logf("NODES=3 down: %v", time.Since(start).Round(100*time.Millisecond))
	after := hostState(t, dir)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s after down:\n%s\nbefore up:\n%s", k, after[k], v)
		}
	}
}

// nodesAreZoned requires the three nodes Ready at their addresses, with
// their hostname and zone labels.
func nodesAreZoned(t *testing.T, k *kube) {
	t.Helper()
	list, err := k.cs.CoreV1().Nodes().List(k.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]corev1.Node{}
	for _, n := range list.Items {
		got[n.Name] = n
	}
	if len(got) != len(threeNodes) {
		t.Fatalf("nodes %v, want %d", slices.Sorted(maps.Keys(got)), len(threeNodes))
	}
	for _, want := range threeNodes {
		n, ok := got[want.name]
		if !ok {
			t.Fatalf("no node %s", want.name)
		}
		ready := false
		for _, c := range n.Status.Conditions {
			ready = ready || c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
		}
		var ip string
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				ip = a.Address
			}
		}
		if !ready || ip != want.ip || n.Labels[corev1.LabelTopologyZone] != want.zone || n.Labels[corev1.LabelHostname] != want.name {
			t.Errorf("node %s: Ready %v, address %s, labels %v; want Ready at %s in %s", want.name, ready, ip, n.Labels, want.ip, want.zone)
		}
	}
}

// crossNodeRequests writes and reads keys through the gateway's Service
// from the client pod, and requires every cache node and shim on another
// node than the gateway to have served some: the gateway reaches them
// over UDP across the node network, and their replies come back, with
// the cluster's NetworkPolicies enforced.
func crossNodeRequests(ctx context.Context, t *testing.T, k *kube, pods map[string]corev1.Pod, client probe) {
	t.Helper()
	var gateway corev1.Pod
	for _, p := range pods {
		if p.Labels[cachecluster.LabelComponent] == cachecluster.ComponentGateway {
			gateway = p
		}
	}
	if gateway.Name == "" {
		t.Fatalf("no gateway pod among %v", slices.Sorted(maps.Keys(pods)))
	}
	clusterIP := k.do("", "get", "service", cachecluster.GatewayName(spread), "-o", "jsonpath={.spec.clusterIP}")
	rc := redis.NewClient(&redis.Options{Addr: net.JoinHostPort(clusterIP, "6379"), Dialer: client.dialer(5 * time.Second)})
	defer rc.Close()
	poll.Eventually(t, "SET through the gateway Service from "+client.name, func() (bool, error) {
		err := rc.Set(ctx, "spread:first", "1", 0).Err()
		return err == nil, err
	})
	const keys = 100
	for i := range keys {
		key, value := "spread:"+strconv.Itoa(i), "v"+strconv.Itoa(i)
		if err := rc.Set(ctx, key, value, 0).Err(); err != nil {
			t.Fatalf("SET %s through the gateway: %v", key, err)
		}
		if got, err := rc.Get(ctx, key).Result(); err != nil || got != value {
			t.Fatalf("GET %s through the gateway = %q (%v), want %q", key, got, err, value)
		}
	}
	remote := 0
	for name, p := range pods {
		var op string
		switch p.Labels[cachecluster.LabelComponent] {
		case cachecluster.ComponentCacheNode:
			op = "GET"
		case cachecluster.ComponentStorage, cachecluster.ComponentShim:
			op = "PUT"
		default:
			continue
		}
		if p.Spec.NodeName == gateway.Spec.NodeName {
			continue
		}
		remote++
		n, err := requestsServed(ctx, p, op)
		if err != nil || n == 0 {
			t.Errorf("%s on %s served %v %s requests (%v) from the gateway on %s", name, p.Spec.NodeName, n, op, err, gateway.Spec.NodeName)
		}
	}
	if remote == 0 {
		t.Fatalf("no data-plane pod on another node than the gateway's %s", gateway.Spec.NodeName)
	}
	t.Logf("%d SET and GET from %s through the gateway on %s, served by %d pods on other nodes", keys, client.name, gateway.Spec.NodeName, remote)
}

// requestsServed sums pod's distcache_requests_total{op} (GET /metrics at
// its pod address).
func requestsServed(ctx context.Context, pod corev1.Pod, op string) (float64, error) {
	r, err := httpget.Get(ctx, "http://"+net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(cachecluster.MetricsPort))+"/metrics")
	if err != nil {
		return 0, err
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(r.Body))
	if err != nil {
		return 0, fmt.Errorf("cannot parse the metrics of %s: %w", pod.Name, err)
	}
	var sum float64
	if f, ok := families["distcache_requests_total"]; ok {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "op" && l.GetValue() == op {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum, nil
}

// cutAndStart cuts a node that runs a pod off the node network with
// `localkube.sh node-cut`: the host no longer reaches the pod; after
// `node-start` it does again.
func cutAndStart(ctx context.Context, t *testing.T, dir string, pods map[string]corev1.Pod) {
	t.Helper()
	var pod corev1.Pod
	for _, p := range pods {
		if p.Spec.NodeName != threeNodes[0].name {
			pod = p
			break
		}
	}
	n := strings.TrimPrefix(pod.Spec.NodeName, "lk-node-")
	addr := net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(cachecluster.MetricsPort))
	reach := func() error {
		c, err := (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, "tcp", addr)
		if err == nil {
			c.Close()
		}
		return err
	}
	if err := reach(); err != nil {
		t.Fatalf("%s at %s before the cut: %v", pod.Name, addr, err)
	}
	script(ctx, t, dir, "node-cut", n)
	if err := reach(); err == nil {
		t.Fatalf("%s at %s reached with %s cut off", pod.Name, addr, pod.Spec.NodeName)
	}
	script(ctx, t, dir, "node-start", n)
	poll.Eventually(t, pod.Name+" reached after node-start", func() (bool, error) {
		err := reach()
		return err == nil, err
	})
}
