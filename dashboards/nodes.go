package dashboards

import "github.com/grafana/grafana-foundation-sdk/go/dashboard"

// nodes is the per-layer, per-node view: how the load spreads over a
// layer's cache nodes, what each caches, and how its hot-key insertion and
// miss handling behave.
func nodes() *dashboard.DashboardBuilder {
	return base("distcache-nodes", "DistCache / Cache nodes",
		"Load, hits, cache contents and hot-key insertion of every cache node of the selected layers.").
		WithRow(dashboard.NewRowBuilder("Load")).
		WithPanel(panel("Load per node", "none",
			"The load each node stamps into its replies (decayed queries per load window), which clients compare to choose between a key's copies. Nodes of a layer should stay close.").
			WithTarget(query(`distcache_node_load{`+layerSel+`}`, "{{process}}"))).
		WithPanel(panel("Reads per node", "reqps",
			"GETs each node answers per second, hits and misses.").
			WithTarget(query(`sum by (process) (rate(distcache_requests_total{role="node", op="GET", `+layerSel+`}[$__rate_interval]))`, "{{process}}"))).
		WithPanel(panel("Hit ratio per node", "percentunit",
			"Share of each node's reads answered from its cache. One node far below its layer: its cache was emptied (a restart) or it holds no serving lease.").
			Max(1).
			WithTarget(query(`sum by (process) (rate(distcache_requests_total{role="node", op="GET", result="hit", `+layerSel+`}[$__rate_interval]))
  / sum by (process) (rate(distcache_requests_total{role="node", op="GET", `+layerSel+`}[$__rate_interval]))`, "{{process}}"))).
		WithPanel(panel("Serving lease", "bool_yes_no",
			"Whether each node holds its serving lease (it renews it by reading its partition map). A node without one serves no cached value: every read goes to storage.").
			Max(1).
			WithTarget(query(`min by (process) (distcache_lease_valid{`+layerSel+`})`, "{{process}}"))).
		WithRow(dashboard.NewRowBuilder("Cache")).
		WithPanel(panel("Cached entries", "short",
			"Entries each node caches, placeholders of pending insertions included.").
			WithTarget(query(`distcache_cache_items{`+layerSel+`}`, "{{process}}"))).
		WithPanel(panel("Cached bytes", "bytes",
			"Value bytes each node caches.").
			WithTarget(query(`distcache_cache_bytes{`+layerSel+`}`, "{{process}}"))).
		WithPanel(panel("Insertions and evictions", "ops",
			"Hot keys inserted and entries evicted per second. Many of both: the working set of hot keys is larger than the cache.").
			WithTarget(query(`sum by (process) (rate(distcache_insertions_total{`+layerSel+`}[$__rate_interval]))`, "inserted {{process}}")).
			WithTarget(query(`sum by (process) (rate(distcache_evictions_total{`+layerSel+`}[$__rate_interval]))`, "evicted {{process}}"))).
		WithPanel(panel("Hot-key sketch fill", "percentunit",
			"Share of the Count-Min sketch's counters at the hot threshold when an interval ends. When it grows, keys that are not hot are reported hot: widen the sketch.").
			WithTarget(query(`distcache_hotkey_sketch_hot_cells_ratio{`+layerSel+`}`, "{{process}}"))).
		WithRow(dashboard.NewRowBuilder("Misses")).
		WithPanel(panel("Coalesced and parked misses", "ops",
			"Misses that joined another reader's pending storage read of the same key (coalesced), and misses that waited for a pending write's second phase instead of reading storage (parked).").
			WithTarget(query(`sum by (process) (rate(distcache_coalesced_requests_total{role="node", `+layerSel+`}[$__rate_interval]))`, "coalesced {{process}}")).
			WithTarget(query(`sum by (process) (rate(distcache_parked_requests_total{`+layerSel+`}[$__rate_interval]))`, "parked {{process}}")))
}
