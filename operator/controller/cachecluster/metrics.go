package cachecluster

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/redundancy"
)

// Metrics are the operator's distcache_operator_* series.
type Metrics struct {
	reconciles *prometheus.CounterVec
	remaps     *prometheus.CounterVec
	version    *prometheus.GaugeVec
	members    *prometheus.GaugeVec
	hotKeys    *prometheus.GaugeVec
}

// NewMetrics registers the metrics with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "distcache_operator_reconciles_total", Help: "CacheCluster reconciles per cluster by result.",
		}, []string{"namespace", "cluster", "result"}),
		remaps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "distcache_operator_remaps_total", Help: "Member state changes the operator published per cluster, by the state entered (Fenced, Failed, Active).",
		}, []string{"namespace", "cluster", "to"}),
		version: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "distcache_operator_map_version", Help: "Published partition map version per cluster.",
		}, []string{"namespace", "cluster"}),
		members: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "distcache_operator_members", Help: "Cache members in the published partition map per cluster, by state (Active, Fenced, Failed).",
		}, []string{"namespace", "cluster", "state"}),
		hotKeys: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "distcache_operator_hot_keys", Help: "Hot keys of the last decision of copies (spec.hotKeys.replication) per cluster, by their number of copies (0, 1, 2, 3+).",
		}, []string{"namespace", "cluster", "copies"}),
	}
	var err error
	if m.reconciles, err = register(reg, m.reconciles); err != nil {
		return nil, err
	}
	if m.remaps, err = register(reg, m.remaps); err != nil {
		return nil, err
	}
	if m.version, err = register(reg, m.version); err != nil {
		return nil, err
	}
	if m.members, err = register(reg, m.members); err != nil {
		return nil, err
	}
	if m.hotKeys, err = register(reg, m.hotKeys); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c, or returns the collector a previous operator in
// this process registered under the same name.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var dup prometheus.AlreadyRegisteredError
		if errors.As(err, &dup) {
			if existing, ok := dup.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, fmt.Errorf("cannot register operator metrics: %w", err)
	}
	return c, nil
}

// reconciled counts a reconcile of cluster that ended with err.
func (m *Metrics) reconciled(namespace, cluster string, err error) {
	if m == nil {
		return
	}
	// Both results exist from the first reconcile on, so a query for the
	// errors of a healthy cluster returns 0, not nothing.
	ok, failed := m.reconciles.WithLabelValues(namespace, cluster, "success"), m.reconciles.WithLabelValues(namespace, cluster, "error")
	if err != nil {
		failed.Inc()
	} else {
		ok.Inc()
	}
}

// remapped counts a member of cluster entering state to.
func (m *Metrics) remapped(namespace, cluster, to string) {
	if m != nil {
		m.remaps.WithLabelValues(namespace, cluster, to).Inc()
	}
}

// published records cluster's published map: its version and its members
// by state (every reconcile, so a restarted operator reports them too).
func (m *Metrics) published(namespace, cluster string, pm *partmap.Map) {
	if m == nil || pm == nil {
		return
	}
	m.version.WithLabelValues(namespace, cluster).Set(float64(pm.Version))
	counts := pm.MembersByState()
	for _, s := range partmap.MemberStates {
		m.members.WithLabelValues(namespace, cluster, string(s)).Set(float64(counts[s]))
		m.remaps.WithLabelValues(namespace, cluster, string(s)) // 0 until the first such change
	}
}

// forget drops the series of a deleted cluster.
func (m *Metrics) forget(namespace, cluster string) {
	if m == nil {
		return
	}
	labels := prometheus.Labels{"namespace": namespace, "cluster": cluster}
	m.reconciles.DeletePartialMatch(labels)
	m.remaps.DeletePartialMatch(labels)
	m.version.DeletePartialMatch(labels)
	m.members.DeletePartialMatch(labels)
	m.hotKeys.DeletePartialMatch(labels)
}

// copiesDecided records a decision of cluster's copies of hot keys; nil:
// none are decided (the series are dropped).
func (m *Metrics) copiesDecided(namespace, cluster string, res *redundancy.Result) {
	if m == nil {
		return
	}
	if res == nil {
		m.hotKeys.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "cluster": cluster})
		return
	}
	for c, n := range res.Buckets() {
		m.hotKeys.WithLabelValues(namespace, cluster, redundancy.CopiesBuckets[c]).Set(float64(n))
	}
}
