package cachecluster

import (
	"context"
	"errors"
	"math"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/layersizing"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/placement/sizing"
)

// CurveReports reads the miss-ratio curves of cache nodes' pods, by
// member name (podstatus.Curves). missing counts the pods whose curve is
// lacking; the error says why, and the others' curves come with it.
type CurveReports interface {
	Curves(ctx context.Context, nodes map[string]*corev1.Pod) (r layersizing.Reports, missing int, err error)
}

// errBudget stops the phases when the cache budget cannot be split.
var errBudget = errors.New("cache budget too small")

// decideSizing gives m's layers of capacity.auto their share of
// spec.cacheBudget (package layersizing) when a split is due, and every
// layer its nodes' own capacity without a budget. Between splits m keeps
// the entries it has.
func (r *Reconciler) decideSizing(ctx context.Context, s *state, m *partmap.Map) (*partmap.Map, error) {
	policy, ok := s.topo.Sizing()
	if !ok || r.Curves == nil {
		s.sizing = nil
		next, _, err := m.WithEntries(nil)
		return next, err
	}
	s.sizing = s.cc.Status.CacheSizing
	if last := s.sizing; last != nil && last.LastDecision != nil {
		if wait := last.LastDecision.Add(policy.Interval).Sub(s.now); wait > 0 && splitHolds(m, policy.Plan) {
			s.recheckWithin(wait)
			return m, nil
		}
	}
	s.recheckWithin(policy.Interval)
	nodes := activeReadyPods(s, m, func(name string) bool { return slices.Contains(policy.Plan.Layers, name) })
	reports, _, err := r.Curves.Curves(ctx, nodes)
	if err != nil {
		log.FromContext(ctx).Info("some miss-ratio curves are missing", "err", err)
	}
	res, err := layersizing.Plan(policy.Plan, m, reports)
	if errors.Is(err, sizing.ErrBudget) {
		_, err = s.block(v1alpha1.ReasonCacheBudgetTooSmall, err)
		return m, errors.Join(err, errBudget)
	}
	if err != nil {
		return m, err
	}
	next, _, err := m.WithEntries(res.Entries)
	if err != nil {
		return m, err
	}
	st := &v1alpha1.CacheSizingStatus{LastDecision: &metav1.Time{Time: s.now}, ReportsMissing: int32(res.Missing)}
	for _, l := range res.Layers {
		st.Layers = append(st.Layers, v1alpha1.LayerSizing{Name: l.Name, Entries: int32(l.Entries),
			EstimatedHitRatio: ratio(l.Estimated), MeasuredHitRatio: ratio(l.Measured)})
	}
	s.sizing = st
	return next, nil
}

// splitHolds says whether m's entries are a split of cfg: entries for the
// sized layers only, within the budget. A changed spec makes a new split
// due at once.
func splitHolds(m *partmap.Map, cfg layersizing.Config) bool {
	used := 0
	for _, l := range m.Layers {
		sized := slices.Contains(cfg.Layers, l.Name)
		if sized != (l.Entries > 0) {
			return false
		}
		used += len(l.Members) * l.Entries
	}
	return used <= cfg.Budget
}

// ratio is a hit ratio as the status shows it; empty when unknown.
func ratio(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return ""
	}
	return strconv.FormatFloat(f, 'f', 3, 64)
}
