package shim

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/transport"
)

// shimMetrics are the shim's Prometheus metrics, children pre-resolved so
// that counting does not allocate.
type shimMetrics struct {
	requests          *metrics.Requests
	invalidationsOK   prometheus.Counter
	invalidationsFail prometheus.Counter
	updatesOK         prometheus.Counter
	updatesFail       prometheus.Counter
	phaseInvalidate   prometheus.Observer
	phaseWrite        prometheus.Observer
	phaseUpdate       prometheus.Observer
	coherenceFailures prometheus.Counter
	redisErrors       prometheus.Counter
	mapVersion        prometheus.Gauge
}

func newShimMetrics(reg prometheus.Registerer, ep *transport.Endpoint) (*shimMetrics, error) {
	invalidations := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "distcache_coherence_invalidations_total",
		Help: "Phase-1 INVALIDATE calls, by result (ok: acknowledged, failed: not in time).",
	}, []string{"result"})
	updates := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "distcache_coherence_updates_total",
		Help: "Phase-2 UPDATE calls, by result (ok: acknowledged, failed: not in time).",
	}, []string{"result"})
	phases := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "distcache_coherence_phase_duration_seconds",
		Help:    "Duration of a write's phases: invalidate (phase 1), write (Redis), update (phase 2).",
		Buckets: metrics.DurationBuckets,
	}, []string{"phase"})
	failures := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "distcache_coherence_failures_total",
		Help: "Writes refused with StatusCoherence because an owner did not acknowledge the invalidation.",
	})
	redisErrors := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "distcache_redis_errors_total",
		Help: "Redis commands that failed.",
	})
	mapVersion := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "distcache_map_version",
		Help: "Version of the partition map in use.",
	})
	if err := metrics.Register(reg, invalidations, updates, phases, failures, redisErrors, mapVersion); err != nil {
		return nil, fmt.Errorf("cannot register shim metrics: %w", err)
	}
	if err := metrics.RegisterTransport(reg, ep); err != nil {
		return nil, fmt.Errorf("cannot register shim metrics: %w", err)
	}
	requests, err := metrics.NewRequests(reg)
	if err != nil {
		return nil, fmt.Errorf("cannot register shim metrics: %w", err)
	}
	return &shimMetrics{
		requests:          requests,
		invalidationsOK:   invalidations.WithLabelValues("ok"),
		invalidationsFail: invalidations.WithLabelValues("failed"),
		updatesOK:         updates.WithLabelValues("ok"),
		updatesFail:       updates.WithLabelValues("failed"),
		phaseInvalidate:   phases.WithLabelValues("invalidate"),
		phaseWrite:        phases.WithLabelValues("write"),
		phaseUpdate:       phases.WithLabelValues("update"),
		coherenceFailures: failures,
		redisErrors:       redisErrors,
		mapVersion:        mapVersion,
	}, nil
}
