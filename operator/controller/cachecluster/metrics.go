package cachecluster

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the operator's distcache_operator_* series.
type Metrics struct {
	reconciles *prometheus.CounterVec
	remaps     *prometheus.CounterVec
	version    *prometheus.GaugeVec
}

// NewMetrics registers the metrics with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "distcache_operator_reconciles_total", Help: "CacheCluster reconciles by result.",
		}, []string{"result"}),
		remaps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "distcache_operator_remaps_total", Help: "Members marked failed (to=Failed) or restored (to=Active).",
		}, []string{"to"}),
		version: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "distcache_operator_map_version", Help: "Published partition map version per cluster.",
		}, []string{"namespace", "cluster"}),
	}
	for _, c := range []prometheus.Collector{m.reconciles, m.remaps, m.version} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("cannot register operator metrics: %w", err)
		}
	}
	return m, nil
}

func (m *Metrics) reconciled(err error) {
	if m == nil {
		return
	}
	result := "success"
	if err != nil {
		result = "error"
	}
	m.reconciles.WithLabelValues(result).Inc()
}

func (m *Metrics) remapped(to string) {
	if m != nil {
		m.remaps.WithLabelValues(to).Inc()
	}
}

func (m *Metrics) mapVersion(namespace, cluster string, v int64) {
	if m != nil {
		m.version.WithLabelValues(namespace, cluster).Set(float64(v))
	}
}
