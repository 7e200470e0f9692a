package cachecluster_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/operator/controller/cachecluster"
	"github.com/distcache/distcache/operator/podstatus"
)

// statusServer is a data-plane process's metrics server (the real one),
// listening on its pod's IP, whose applied map version the test sets.
type statusServer struct {
	version atomic.Int64
	addr    string
}

func startStatusServer(t *testing.T, ip string, port int) *statusServer {
	t.Helper()
	s := &statusServer{}
	port = startPodMetrics(t, ip, port, metrics.WithStatus(func() metrics.Status { return metrics.Status{MapVersion: s.version.Load()} }))
	s.addr = net.JoinHostPort(ip, strconv.Itoa(port))
	return s
}

// startPodMetrics starts a data-plane process's metrics server (the real
// one) on its pod's IP and port (0: any), serving opts, and returns the
// port.
func startPodMetrics(t *testing.T, ip string, port int, opts ...metrics.ServerOption) int {
	t.Helper()
	srv, err := metrics.Listen(net.JoinHostPort(ip, strconv.Itoa(port)), prometheus.NewRegistry(), nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close(context.Background()) })
	_, portText, _ := net.SplitHostPort(srv.Addr())
	port, _ = strconv.Atoi(portText)
	return port
}

// setPodsReadyAt makes each named pod Ready since a minute before clk's
// time, at its IP.
func setPodsReadyAt(t *testing.T, cc *v1alpha1.CacheCluster, clk *clock, ips map[string]string) {
	t.Helper()
	for name, ip := range ips {
		// In one update, as a kubelet reports a started pod: the operator
		// never sees a Ready pod without its address.
		pod := podNamed(t, cc, name)
		setReadyCondition(pod, true, clk.Now().Add(-time.Minute))
		pod.Status.PodIP = ip
		if err := env.Client.Status().Update(context.Background(), pod); err != nil {
			t.Fatal(err)
		}
	}
}

// setPodIP gives a pod the IP its process listens on.
func setPodIP(t *testing.T, cc *v1alpha1.CacheCluster, name, ip string) {
	t.Helper()
	pod := &corev1.Pod{}
	if err := get(t, pod, cc.Namespace, name); err != nil {
		t.Fatal(err)
	}
	pod.Status.PodIP = ip
	if err := env.Client.Status().Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
}

// TestReadyWaitsForMapApplied: with every pod Ready, the cluster is Ready
// only once every pod's process reports the published map version, and the
// status counts them. A later version the processes have not installed
// leaves it Ready, for reason Serving, and Progressing.
func TestReadyWaitsForMapApplied(t *testing.T) {
	spine := startStatusServer(t, "127.0.0.5", 0)
	_, portText, _ := net.SplitHostPort(spine.addr)
	port, _ := strconv.Atoi(portText)
	shard := startStatusServer(t, "127.0.0.6", port)
	clk := &clock{t: time.Now()}
	startOperator(t, clk, func(r *cachecluster.Reconciler) { r.Applied = &podstatus.Prober{Port: port} })
	cc := newCluster(t, "applied", withStorage(v1alpha1.StorageManaged, 1, 1), withLayer("spine", 1, false))
	eventually(t, "map published", func() (bool, error) { _, err := publishedMap(t, cc); return err == nil, err })
	for name, ip := range map[string]string{"applied-spine-0": "127.0.0.5", "applied-rack-0-0": "127.0.0.6"} {
		setPodReady(t, cc, name, true, clk.Now().Add(-time.Minute))
		setPodIP(t, cc, name, ip)
	}

	status := func(applied int32, ready bool, reason string) func() (bool, error) {
		return func() (bool, error) {
			stored := &v1alpha1.CacheCluster{}
			err := get(t, stored, cc.Namespace, cc.Name)
			c := meta.FindStatusCondition(stored.Status.Conditions, string(v1alpha1.ConditionReady))
			return err == nil && c != nil && stored.Status.ReadyPods == 2 && stored.Status.MapApplied == applied &&
				(c.Status == "True") == ready && c.Reason == reason, err
		}
	}
	// The map names the pods by their IPs once they have them.
	var version int64
	eventually(t, "map with the pods' IPs published", func() (bool, error) {
		m, err := publishedMap(t, cc)
		if err != nil {
			return false, err
		}
		version = m.Version
		return m.Layers[0].Members[0].Address == "127.0.0.5:7100" && m.Storage.Racks[0].Shards[0].Address == "127.0.0.6:7000",
			fmt.Errorf("map v%d: %+v", m.Version, m)
	})
	eventually(t, "pods Ready, no process uses the map: not Ready", status(0, false, v1alpha1.ReasonMapNotApplied))
	spine.version.Store(version)
	eventually(t, "one of two uses it", status(1, false, v1alpha1.ReasonMapNotApplied))
	shard.version.Store(version)
	eventually(t, "both use it: Ready", status(2, true, v1alpha1.ReasonReconciled))

	// The spine pod comes back at a new IP: a new map version, which its
	// process and the shard's do not use yet. The cluster has served, so
	// it stays Ready (Serving) and Progressing says the map is on its way.
	moved := startStatusServer(t, "127.0.0.7", port)
	setPodIP(t, cc, "applied-spine-0", "127.0.0.7")
	eventually(t, "a new map pending: still Ready, Serving", status(0, true, v1alpha1.ReasonServing))
	stored := &v1alpha1.CacheCluster{}
	if err := get(t, stored, cc.Namespace, cc.Name); err != nil {
		t.Fatal(err)
	}
	if p := meta.FindStatusCondition(stored.Status.Conditions, string(v1alpha1.ConditionProgressing)); p == nil || p.Status != "True" || p.Reason != v1alpha1.ReasonMapNotApplied {
		t.Errorf("Progressing %+v, want True for MapNotApplied", p)
	}
	moved.version.Store(stored.Status.MapVersion)
	shard.version.Store(stored.Status.MapVersion)
	eventually(t, "both use the new map: Reconciled", status(2, true, v1alpha1.ReasonReconciled))
}
