package dashboards

import "github.com/grafana/grafana-foundation-sdk/go/dashboard"

// overview is the cluster overview: what the cache does for its users
// (throughput, hit ratio, latency), whether it balances the load (the
// paper's goal), whether its control plane is healthy (map convergence,
// failed members, coherence timeouts), and what its Redis clients see at
// the gateway.
func overview() *dashboard.DashboardBuilder {
	return base("distcache-overview", "DistCache / Cluster overview",
		"Throughput, hit ratio, balance and latency of a DistCache cluster, and the health of its partition map.").
		WithRow(dashboard.NewRowBuilder("Traffic")).
		WithPanel(panel("Throughput", "reqps",
			"Requests the cache nodes handle, by operation. Reads (GET) are the cache's traffic; writes go to the shims.").
			WithTarget(query(`sum by (op) (rate(distcache_requests_total{role="node", `+layerSel+`}[$__rate_interval]))`, "{{op}}"))).
		WithPanel(panel("Hit ratio by layer", "percentunit",
			"Share of the reads each layer answers from cache. A drop means the storage shards take the difference (alert DistCacheHitRatioCollapse).").
			Max(1).
			WithTarget(query(`sum by (layer) (rate(distcache_requests_total{role="node", op="GET", result="hit", `+layerSel+`}[$__rate_interval]))
  / sum by (layer) (rate(distcache_requests_total{role="node", op="GET", `+layerSel+`}[$__rate_interval]))`, "{{layer}}"))).
		WithPanel(panel("Load imbalance (max / mean) by layer", "none",
			"The busiest cache node's load over the layer's mean. Power-of-two-choices keeps it near 1; above 3 for long, see alert DistCacheLoadImbalance.").
			WithTarget(query(`max by (layer) (distcache_node_load{`+layerSel+`}) / avg by (layer) (distcache_node_load{`+layerSel+`})`, "{{layer}}"))).
		WithPanel(panel("Read latency at the cache nodes", "s",
			"p50 and p99 of the time from a GET's arrival at a node to its reply (a miss includes the shim's answer).").
			WithTarget(query(`histogram_quantile(0.5, sum by (le) (rate(distcache_request_duration_seconds_bucket{role="node", op="GET", `+layerSel+`}[$__rate_interval])))`, "p50")).
			WithTarget(query(`histogram_quantile(0.99, sum by (le) (rate(distcache_request_duration_seconds_bucket{role="node", op="GET", `+layerSel+`}[$__rate_interval])))`, "p99"))).
		WithRow(dashboard.NewRowBuilder("Partition map and coherence")).
		WithPanel(panel("Partition map version", "none",
			"The version the control plane published and the oldest one a process uses. Apart for minutes: alert DistCacheMapNotConverged.").
			WithTarget(query(`max(distcache_controlloop_map_version{`+clusterSel+`} or distcache_operator_map_version{`+clusterSel+`})`, "published")).
			WithTarget(query(`min(distcache_map_version{`+clusterSel+`})`, "oldest in use"))).
		WithPanel(panel("Cache members by state", "none",
			"Members of the published map: Active, Fenced (readers leave it), Failed (its keys moved to the survivors; alert DistCacheMemberFailed).").
			WithTarget(query(`sum by (state) (distcache_controlloop_members{`+clusterSel+`} or distcache_operator_members{`+clusterSel+`})`, "{{state}}"))).
		WithPanel(panel("Coherence timeouts", "reqps",
			"Writes refused because an owner of a cached copy did not acknowledge its invalidation in time. Not lost: refused (alert DistCacheCoherenceTimeouts).").
			WithTarget(query(`sum(rate(distcache_requests_total{result="coherence_timeout", `+clusterSel+`}[$__rate_interval]))`, "timeouts"))).
		WithRow(dashboard.NewRowBuilder("Redis gateway")).
		WithPanel(panel("Gateway commands", "reqps",
			"Redis commands the gateways run, the eight busiest (docs/gateway.md).").
			WithTarget(query(`topk(8, sum by (command) (rate(distcache_gateway_commands_total{`+clusterSel+`}[$__rate_interval])))`, "{{command}}"))).
		WithPanel(panel("Gateway errors", "percentunit",
			"Share of the commands answered with an error: the client's (wrong arguments, unknown commands) and the cluster's (timeouts, unavailable shards).").
			Max(1).
			WithTarget(query(`sum(rate(distcache_gateway_command_errors_total{`+clusterSel+`}[$__rate_interval]))
  / sum(rate(distcache_gateway_commands_total{`+clusterSel+`}[$__rate_interval]))`, "errors"))).
		WithPanel(panel("Gateway GET and SET latency", "s",
			"p50 and p99 from a command's start at the gateway to its reply, waiting for --max-in-flight included.").
			WithTarget(query(`histogram_quantile(0.5, sum by (le, command) (rate(distcache_gateway_command_duration_seconds_bucket{command=~"get|set", `+clusterSel+`}[$__rate_interval])))`, "p50 {{command}}")).
			WithTarget(query(`histogram_quantile(0.99, sum by (le, command) (rate(distcache_gateway_command_duration_seconds_bucket{command=~"get|set", `+clusterSel+`}[$__rate_interval])))`, "p99 {{command}}"))).
		WithPanel(panel("Gateway connections and commands in the cluster", "none",
			"Open client connections, and commands running in the cluster (at most --max-in-flight per gateway; more wait in the gateway).").
			WithTarget(query(`sum(distcache_gateway_connections{`+clusterSel+`})`, "connections")).
			WithTarget(query(`sum(distcache_gateway_cluster_commands{`+clusterSel+`})`, "in the cluster")))
}
