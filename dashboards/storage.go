package dashboards

import "github.com/grafana/grafana-foundation-sdk/go/dashboard"

// storage is the storage view: every shard's shim, its Redis and the
// two-phase coherence protocol it runs for writes.
func storage() *dashboard.DashboardBuilder {
	return base("distcache-storage", "DistCache / Storage",
		"Requests, Redis errors and write coherence of every storage shard.").
		WithPanel(panel("Requests per shard", "reqps",
			"Requests each storage shim handles per second: the cache's misses and every write. One shard far above the others is a hot key the cache does not hold.").
			WithTarget(query(`sum by (process) (rate(distcache_requests_total{role="shim", `+clusterSel+`}[$__rate_interval]))`, "{{process}}"))).
		WithPanel(panel("Redis errors per shard", "ops",
			"Redis commands that failed, per shard: its reads miss and its writes fail (alert DistCacheRedisErrors).").
			WithTarget(query(`sum by (process) (rate(distcache_redis_errors_total{`+clusterSel+`}[$__rate_interval]))`, "{{process}}"))).
		WithPanel(panel("Write phases, p99", "s",
			"p99 of each phase of a write at the shims: invalidate (phase 1: every owner of a copy acknowledges), write (Redis), update (phase 2).").
			WithTarget(query(`histogram_quantile(0.99, sum by (le, phase) (rate(distcache_coherence_phase_duration_seconds_bucket{`+clusterSel+`}[$__rate_interval])))`, "{{phase}}"))).
		WithPanel(panel("Invalidations by result", "ops",
			"Phase-1 invalidations per second: acknowledged (ok), not in time (failed: the write is refused), released (the owner can no longer serve a copy), best effort.").
			WithTarget(query(`sum by (result) (rate(distcache_coherence_invalidations_total{`+clusterSel+`}[$__rate_interval]))`, "{{result}}")))
}
