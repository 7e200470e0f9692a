package shim

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/distcache/distcache/dataplane/capacity"
	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/transport"
)

// shimMetrics are the shim's Prometheus metrics, children pre-resolved so
// that counting does not allocate.
type shimMetrics struct {
	requests                *metrics.Requests
	invalidationsOK         prometheus.Counter
	invalidationsFail       prometheus.Counter
	invalidationsBestEffort prometheus.Counter
	invalidationsReleased   prometheus.Counter
	copies                  prometheus.Counter
	updatesOK               prometheus.Counter
	updatesFail             prometheus.Counter
	phaseInvalidate         prometheus.Observer
	phaseWrite              prometheus.Observer
	phaseUpdate             prometheus.Observer
	coherenceFailures       prometheus.Counter
	redisErrors             prometheus.Counter
	alreadyApplied          prometheus.Counter
	mapVersion              prometheus.Gauge
}

func newShimMetrics(reg prometheus.Registerer, ep *transport.Endpoint, work *capacity.Limiter, c *counters) (*shimMetrics, error) {
	invalidations := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "distcache_coherence_invalidations_total",
		Help: "Phase-1 INVALIDATEs sent, by result (ok: acknowledged, failed: not in time, released: no longer awaited once the owner's serving lease ran out after it was removed or fenced, best_effort: sent once to such an owner, not awaited).",
	}, []string{"result"})
	copies := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "distcache_coherence_copies_total",
		Help: "Cached copies that writes invalidated (and then update): acknowledged INVALIDATEs that reported a copy (FlagHit); each costs 1 work unit.",
	})
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
	alreadyApplied := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "distcache_writes_already_applied_total",
		Help: "Retransmitted writes that a previous run of the shim had applied before it died: acknowledged, not applied again.",
	})
	mapVersion := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "distcache_map_version",
		Help: "Version of the partition map in use.",
	})
	if err := metrics.Register(reg, invalidations, copies, updates, phases, failures, redisErrors, alreadyApplied, mapVersion,
		metrics.CounterFunc("distcache_work_units_total",
			"Work units taken from the emulated capacity: 1 per GET, FETCH, PUT and DEL served, 1 per cached copy a write invalidates and updates.",
			work.Used),
		metrics.GaugeFunc("distcache_work_capacity", "Emulated capacity in work units per second (0: unlimited).", work.Rate),
		metrics.CounterFunc("distcache_coalesced_requests_total",
			"GETs answered by the Redis read of another GET of the key, which they joined while it waited for its work unit.", c.coalescedGets.Load),
		metrics.CounterFunc("distcache_read_batches_total",
			"Receive batches of several GETs served together: one Redis round trip for their keys, one send for their replies.", c.readBatches.Load),
		metrics.CounterFunc("distcache_batched_reads_total", "GETs served in such a batch.", c.batchedReads.Load),
		metrics.CounterFunc("distcache_write_batches_total",
			"Receive batches whose writes, of keys no cache node may hold, were served together: one Redis round trip, one send for their replies.", c.writeBatches.Load),
		metrics.CounterFunc("distcache_batched_writes_total", "Writes served in such a batch.", c.batchedWrites.Load),
		metrics.CounterFunc("distcache_coherence_skipped_total",
			"Owners a write did not invalidate or update: the shim's directory of copies lists no entry of the key there.", c.invalidationsSkipped.Load),
		metrics.CounterFunc("distcache_flushes_total",
			"FLUSHes cache nodes acknowledged: they dropped this shard's entries, so writes skip them for keys they did not fetch.", c.flushes.Load),
	); err != nil {
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
		requests:                requests,
		invalidationsOK:         invalidations.WithLabelValues("ok"),
		invalidationsFail:       invalidations.WithLabelValues("failed"),
		invalidationsBestEffort: invalidations.WithLabelValues("best_effort"),
		invalidationsReleased:   invalidations.WithLabelValues("released"),
		copies:                  copies,
		updatesOK:               updates.WithLabelValues("ok"),
		updatesFail:             updates.WithLabelValues("failed"),
		phaseInvalidate:         phases.WithLabelValues("invalidate"),
		phaseWrite:              phases.WithLabelValues("write"),
		phaseUpdate:             phases.WithLabelValues("update"),
		coherenceFailures:       failures,
		redisErrors:             redisErrors,
		alreadyApplied:          alreadyApplied,
		mapVersion:              mapVersion,
	}, nil
}
