package cachecluster

import (
	"context"
	"math"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/layout"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/redundancy"
)

// HotKeyReports reads a round of the data plane's hot-key reports
// (podstatus.HotKeys): those of the cache nodes' pods and of the storage
// shims' pods, by shard name. missing counts the pods whose report the
// round lacks; the error says why, and the reports of the others come
// with it.
type HotKeyReports interface {
	Reports(ctx context.Context, nodes []*corev1.Pod, shims map[string]*corev1.Pod) (r redundancy.Reports, missing int, err error)
}

// decideCopies gives m the copies of hot keys that spec.hotKeys.replication
// decides (package redundancy) when a decision is due, and none when the
// spec does not enable it. Between decisions m keeps the copies it has.
func (r *Reconciler) decideCopies(ctx context.Context, s *state, m *partmap.Map) (*partmap.Map, error) {
	policy, ok := s.topo.Copies(0, 0)
	if !ok || r.HotKeys == nil {
		s.hotKeys = nil
		r.Metrics.copiesDecided(s.cc.Namespace, s.cc.Name, nil)
		next, _, err := m.WithCopies(nil)
		return next, err
	}
	s.hotKeys = s.cc.Status.HotKeys
	if last := s.hotKeys; last != nil && last.LastDecision != nil {
		if wait := last.LastDecision.Add(policy.Interval).Sub(s.now); wait > 0 {
			s.recheckWithin(wait)
			return m, nil
		}
	}
	s.recheckWithin(policy.Interval)
	nodes, shims := r.reportingPods(s, m)
	reports, missing, err := r.HotKeys.Reports(ctx, nodes, shims)
	if err != nil {
		log.FromContext(ctx).Info("some hot-key reports are missing", "missing", missing, "err", err)
	}
	status := &v1alpha1.HotKeyStatus{LastDecision: &metav1.Time{Time: s.now}, ReportsMissing: int32(missing)}
	if missing == len(nodes)+len(shims) {
		// Nothing reported: keep the copies rather than drop them all.
		status.Decided = int32(len(m.Copies))
		s.hotKeys = status
		return m, nil
	}
	next, res, err := planCopies(policy, m, r.copiesHistory.smoothed(s.cc.Namespace+"/"+s.cc.Name, reports))
	if err != nil {
		return m, err
	}
	by := res.Buckets()
	status.Uncached, status.OneCopy, status.TwoCopies, status.MoreCopies = int32(by[0]), int32(by[1]), int32(by[2]), int32(by[3])
	status.Decided = int32(len(next.Copies))
	if !math.IsInf(res.Rate, 0) && !math.IsNaN(res.Rate) { // no key considered: no bound
		status.LoadHeadroom = strconv.FormatFloat(res.Rate, 'f', 2, 64)
	}
	s.hotKeys = status
	r.Metrics.copiesDecided(s.cc.Namespace, s.cc.Name, &res)
	return next, nil
}

// planCopies is m with the copies policy decides from reports.
func planCopies(policy layout.CopiesPolicy, m *partmap.Map, reports redundancy.Reports) (*partmap.Map, redundancy.Result, error) {
	p, err := partmap.Compile(m)
	if err != nil {
		return m, redundancy.Result{}, err
	}
	res, err := redundancy.Plan(policy.Plan, p, reports)
	if err != nil {
		return m, res, err
	}
	next, _, err := m.WithCopies(res.Copies)
	return next, res, err
}

// reportingPods are the Ready pods of m's Active members and of the
// storage shims, by shard name.
func (r *Reconciler) reportingPods(s *state, m *partmap.Map) (nodes []*corev1.Pod, shims map[string]*corev1.Pod) {
	for _, p := range activeReadyPods(s, m, func(string) bool { return true }) {
		nodes = append(nodes, p)
	}
	return nodes, s.readyShims
}

// activeReadyPods are the Ready pods of m's Active members of the layers
// that layer accepts, by member name: the cache nodes whose reports count.
func activeReadyPods(s *state, m *partmap.Map, layer func(name string) bool) map[string]*corev1.Pod {
	out := map[string]*corev1.Pod{}
	for _, l := range m.Layers {
		if !layer(l.Name) {
			continue
		}
		for _, mb := range l.Members {
			if p := s.pods[mb.Name]; mb.State == partmap.Active && podReady(p) {
				out[mb.Name] = p
			}
		}
	}
	return out
}

// reportHistory keeps each cluster's last rounds of hot-key reports
// (redundancy.Smoother) across reconciles.
type reportHistory struct {
	mu  sync.Mutex                      // guards per
	per map[string]*redundancy.Smoother // by namespace/name
}

// smoothed records cluster's round r and returns the smoothed reports.
func (h *reportHistory) smoothed(cluster string, r redundancy.Reports) redundancy.Reports {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.per == nil {
		h.per = map[string]*redundancy.Smoother{}
	}
	sm, ok := h.per[cluster]
	if !ok {
		sm = &redundancy.Smoother{}
		h.per[cluster] = sm
	}
	return sm.Add(r)
}

// forget drops a deleted cluster's rounds.
func (h *reportHistory) forget(cluster string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.per, cluster)
}

// recheckWithin makes the reconcile come back within d at the latest.
func (s *state) recheckWithin(d time.Duration) {
	if d > 0 && (s.requeue == 0 || d < s.requeue) {
		s.requeue = d
	}
}
