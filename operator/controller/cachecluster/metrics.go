package cachecluster

import (
	"errors"
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
