package cachecluster_test

import (
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/operator/controller/cachecluster"
	"github.com/distcache/distcache/operator/podstatus"
)

// curveServer is a cache node's metrics server (the real one), listening
// on its pod's IP, whose miss-ratio curve the test sets.
type curveServer struct {
	mu    sync.Mutex // guards curve
	curve metrics.MissRatioCurve
}

func startCurveServer(t *testing.T, ip string, port int) (*curveServer, int) {
	t.Helper()
	s := &curveServer{}
	port = startPodMetrics(t, ip, port,
		metrics.WithMissRatioCurve(func() metrics.MissRatioCurve { s.mu.Lock(); defer s.mu.Unlock(); return s.curve }))
	return s, port
}

// report sets the curve: reads a second spread evenly over keys keys, in a
// window of 10 s, hits of them served.
func (s *curveServer) report(reads float64, keys int, hits float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	req := uint64(reads * 10)
	s.curve = metrics.MissRatioCurve{Window: 10, Requests: req, Hits: uint64(hits * float64(req)),
		Points: []metrics.CurvePoint{{Entries: keys, MissRatio: 0}}}
}

// withAutoLayers sizes every inline layer from a budget of entries.
func withAutoLayers(entries int64) clusterOption {
	return func(cc *v1alpha1.CacheCluster) {
		for i := range cc.Spec.Layers {
			cc.Spec.Layers[i].Capacity.Auto = true
		}
		cc.Spec.CacheBudget = &v1alpha1.CacheBudgetSpec{Entries: entries, Interval: &metav1.Duration{Duration: time.Second}}
	}
}

// TestCacheBudgetSplitFromTheCurves: the first map splits the budget
// evenly; once every node reports its curve, the operator gives the leaf
// the entries its reads need and the spines the rest, publishes the split
// in the map and reports it with the estimated and measured hit ratios; a
// budget too small for the nodes blocks the cluster with a reason.
func TestCacheBudgetSplitFromTheCurves(t *testing.T) {
	spine0, port := startCurveServer(t, "127.0.0.31", 0)
	spine1, _ := startCurveServer(t, "127.0.0.32", port)
	leaf, _ := startCurveServer(t, "127.0.0.33", port)
	clk := &clock{t: time.Now()}
	startOperator(t, clk, func(r *cachecluster.Reconciler) { r.Curves = podstatus.NewCurves(port) })
	cc := newCluster(t, "sizing", withStorage(v1alpha1.StorageManaged, 1, 1), withLayer("spine", 2, false), withLayer("leaf", 1, false),
		withAutoLayers(1500))
	eventually(t, "the even split first", func() (bool, error) {
		m, err := publishedMap(t, cc)
		return err == nil && m.Layers[0].Entries == 500 && m.Layers[1].Entries == 500, err
	})
	spine0.report(1000, 1000, 0.5)
	spine1.report(1000, 1000, 0.5)
	leaf.report(500, 100, 1)
	setPodsReadyAt(t, cc, clk, map[string]string{"sizing-spine-0": "127.0.0.31", "sizing-spine-1": "127.0.0.32", "sizing-leaf-0": "127.0.0.33"})
	eventually(t, "the leaf its 100 keys, the spines the rest", func() (bool, error) {
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
		st := stored.Status.CacheSizing
		return m.Layers[0].Entries == 700 && m.Layers[1].Entries == 100 && st != nil && len(st.Layers) == 2 &&
			st.Layers[0].Entries == 700 && st.Layers[0].EstimatedHitRatio == "0.700" && st.Layers[0].MeasuredHitRatio == "0.500" &&
			st.Layers[1].EstimatedHitRatio == "1.000" && st.ReportsMissing == 0, nil
	})

	stored := &v1alpha1.CacheCluster{}
	updateSpec(t, cc, func(stored *v1alpha1.CacheCluster) { stored.Spec.CacheBudget.Entries = 2 })
	eventually(t, "a budget of 2 entries for 3 nodes: blocked", func() (bool, error) {
		if err := get(t, stored, cc.Namespace, cc.Name); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(stored.Status.Conditions, string(v1alpha1.ConditionReady))
		return c != nil && c.Reason == v1alpha1.ReasonCacheBudgetTooSmall && stored.Status.ObservedGeneration == stored.Generation, nil
	})
}
