package dashboards

import "github.com/grafana/grafana-foundation-sdk/go/dashboard"

// operatorSel selects the controllers of the DistCache operator among
// controller-runtime's series; those series carry the operator pod's own
// namespace, not a CacheCluster's, so the operator's panels do not filter
// them by the dashboard's variables.
const operatorSel = `controller=~"cachecluster|cachelayer|switchfabric"`

// operator is the operator's view: whether it reconciles the clusters
// (results, errors, duration, queue), which member state changes it
// published (the remaps of the paper's failure handling, §4.3), and the
// maps it publishes per cluster.
func operator() *dashboard.DashboardBuilder {
	return base("distcache-operator", "DistCache / Operator",
		"Reconciles, remaps and published partition maps of the DistCache operator, per CacheCluster.").
		Tags([]string{"distcache", kubernetesTag}).
		WithRow(dashboard.NewRowBuilder("Reconciles")).
		WithPanel(panel("Reconciles by result", "ops",
			"CacheCluster reconciles per second of the selected clusters, successful and failed. Errors for ten minutes: alert DistCacheOperatorReconcileErrors.").
			WithTarget(query(`sum by (result) (rate(distcache_operator_reconciles_total{`+clusterSel+`}[$__rate_interval]))`, "{{result}}"))).
		WithPanel(panel("Reconcile errors per cluster", "ops",
			"Failed reconciles per second of each CacheCluster: the operator log's \"Reconciler error\" lines name the cause.").
			WithTarget(query(`sum by (namespace, cluster) (rate(distcache_operator_reconciles_total{result="error", `+clusterSel+`}[$__rate_interval]))`, "{{namespace}}/{{cluster}}"))).
		WithPanel(panel("Reconcile duration, p99", "s",
			"p99 of a reconcile's duration per controller of the operator (all clusters). Seconds here delay every failover by as much.").
			WithTarget(query(`histogram_quantile(0.99, sum by (le, controller) (rate(controller_runtime_reconcile_time_seconds_bucket{`+operatorSel+`}[$__rate_interval])))`, "{{controller}}"))).
		WithPanel(panel("Work queue depth", "short",
			"Objects waiting for a reconcile per controller (all clusters). A queue that keeps growing: the operator cannot keep up, or the API server throttles it.").
			WithTarget(query(`max by (name) (workqueue_depth{name=~"cachecluster|cachelayer|switchfabric"})`, "{{name}}"))).
		WithPanel(panel("Leader", "bool_yes_no",
			"Whether an operator replica holds the leader lease: without a leader, nothing is reconciled and no failure is remapped.").
			Max(1).
			WithTarget(query(`max(leader_election_master_status)`, "leader"))).
		WithRow(dashboard.NewRowBuilder("Partition maps")).
		WithPanel(panel("Member state changes", "short",
			"Members the operator fenced, failed over (their keys moved to the survivors by consistent hashing) or restored, per cluster over each interval.").
			WithTarget(query(`sum by (cluster, to) (increase(distcache_operator_remaps_total{`+clusterSel+`}[$__rate_interval]))`, "{{cluster}} to {{to}}"))).
		WithPanel(panel("Published map version", "none",
			"The partition map version the operator published per cluster; it steps at every remap and topology change.").
			WithTarget(query(`max by (namespace, cluster) (distcache_operator_map_version{`+clusterSel+`})`, "{{namespace}}/{{cluster}}"))).
		WithPanel(panel("Members by state", "none",
			"Members of each cluster's published map by state. Failed for a minute: alert DistCacheMemberFailed.").
			WithTarget(query(`sum by (cluster, state) (distcache_operator_members{`+clusterSel+`})`, "{{cluster}} {{state}}")))
}
