package cachecluster_test

import (
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/operator/controller/cachecluster"
	"github.com/distcache/distcache/operator/podstatus"
	"github.com/distcache/distcache/placement/partmap"
)

// hotKeyServer is a data-plane process's metrics server (the real one),
// listening on its pod's IP, whose hot-key report the test sets.
type hotKeyServer struct {
	mu  sync.Mutex // guards hot
	hot metrics.HotKeys
}

func startHotKeyServer(t *testing.T, ip string, port int) (*hotKeyServer, int) {
	t.Helper()
	s := &hotKeyServer{}
	port = startPodMetrics(t, ip, port,
		metrics.WithHotKeys(func() metrics.HotKeys { s.mu.Lock(); defer s.mu.Unlock(); return s.hot }),
		metrics.WithWork(func() metrics.Work { return metrics.Work{} }))
	return s, port
}

// report sets the server's report: a second's counts of each key.
func (s *hotKeyServer) report(keys ...metrics.KeyCount) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hot = metrics.HotKeys{Interval: 1, Keys: keys}
}

func (c *clock) advance(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }

// withReplication turns spec.hotKeys.replication on.
func withReplication(r v1alpha1.HotKeyReplicationSpec) clusterOption {
	return func(cc *v1alpha1.CacheCluster) {
		r.Enabled = true
		cc.Spec.HotKeys.Replication = &r
	}
}

// TestCopiesDecidedFromTheReports: the operator reads the hot-key reports
// of the Ready pods' processes, gives a key hotter than half a node a copy
// on every spine member and a write-hot key none, publishes them in the
// map and counts them in the status; turned off, every key goes back to
// one copy per layer.
func TestCopiesDecidedFromTheReports(t *testing.T) {
	spine0, port := startHotKeyServer(t, "127.0.0.21", 0)
	spine1, _ := startHotKeyServer(t, "127.0.0.22", port)
	leaf0, _ := startHotKeyServer(t, "127.0.0.23", port)
	shim, _ := startHotKeyServer(t, "127.0.0.24", port)
	clk := &clock{t: time.Now()}
	startOperator(t, clk, func(r *cachecluster.Reconciler) { r.HotKeys = podstatus.NewHotKeys(port) })
	cc := newCluster(t, "copies", withStorage(v1alpha1.StorageManaged, 1, 1), withLayer("spine", 2, false), withLayer("leaf", 1, false),
		withReplication(v1alpha1.HotKeyReplicationSpec{Interval: &metav1.Duration{Duration: time.Second}, NodeCapacity: 1000, StorageCapacity: 10000}))
	eventually(t, "map published", func() (bool, error) { _, err := publishedMap(t, cc); return err == nil, err })
	spine0.report(metrics.KeyCount{Key: []byte("ultra"), Reads: 900})
	spine1.report()
	leaf0.report(metrics.KeyCount{Key: []byte("ultra"), Reads: 600})
	shim.report(metrics.KeyCount{Key: []byte("ultra"), Reads: 50}, metrics.KeyCount{Key: []byte("written"), Reads: 100, Writes: 400})
	setPodsReadyAt(t, cc, clk, map[string]string{"copies-spine-0": "127.0.0.21", "copies-spine-1": "127.0.0.22", "copies-leaf-0": "127.0.0.23", "copies-rack-0-0": "127.0.0.24"})

	eventually(t, "ultra on every spine member and the leaf, written uncached", func() (bool, error) {
		// A decision comes due at every poll: one made before the
		// operator's cache saw every pod Ready is made again.
		clk.advance(time.Second)
		m, err := publishedMap(t, cc)
		if err != nil {
			return false, err
		}
		stored := &v1alpha1.CacheCluster{}
		if err := get(t, stored, cc.Namespace, cc.Name); err != nil {
			return false, err
		}
		hk := stored.Status.HotKeys
		return copiesOf(m, "ultra") == 3 && copiesOf(m, "written") == 0 && len(m.Copies) == 2 &&
			hk != nil && hk.MoreCopies == 1 && hk.Uncached == 1 && hk.Decided == 2 && hk.ReportsMissing == 0, nil
	})

	stored := &v1alpha1.CacheCluster{}
	updateSpec(t, cc, func(stored *v1alpha1.CacheCluster) { stored.Spec.HotKeys.Replication.Enabled = false })
	eventually(t, "replication off: no decided copies, no status", func() (bool, error) {
		m, err := publishedMap(t, cc)
		if err != nil {
			return false, err
		}
		if err := get(t, stored, cc.Namespace, cc.Name); err != nil {
			return false, err
		}
		return len(m.Copies) == 0 && stored.Status.HotKeys == nil, nil
	})
}

// copiesOf is the number of holders m decides for key, -1 when it decides
// none (one copy per layer).
func copiesOf(m *partmap.Map, key string) int {
	for _, kc := range m.Copies {
		if string(kc.Key) == key {
			return len(kc.Members)
		}
	}
	return -1
}
