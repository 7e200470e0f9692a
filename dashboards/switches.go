package dashboards

import "github.com/grafana/grafana-foundation-sdk/go/dashboard"

// fabricRate is the per-second rate of a fabric controller counter per
// switch member.
func fabricRate(counter string) string {
	return `sum by (switch_member) (rate(distcache_fabric_` + counter + `_total{` + clusterSel + `}[$__rate_interval]))`
}

// switches is the view of a cluster's switch-backed layers, from the
// fabric controller's series (the operator's per SwitchFabric, or
// `distcache fabric`'s): whether each switch is programmed and holds its
// lease, and how its cache is filled — the hot keys the switch reports
// and the controller inserts (NetCache §4.3), the slots filled in the data
// plane and the evictions.
func switches() *dashboard.DashboardBuilder {
	return base("distcache-switches", "DistCache / Switches",
		"Sessions, serving leases and hot-key insertion of the switches of the cluster's switch-backed layers.").
		Tags([]string{"distcache", switchesTag}).
		WithPanel(panel("Switches programmed", "short",
			"1 while a fabric controller (one replica of the operator) is the switch's primary and runs it with the pipeline it pushed or found; 0: failed over, serving nothing cached (alert DistCacheSwitchNotProgrammed).").
			WithTarget(query(`max by (switch_member) (distcache_fabric_switch_programmed{`+clusterSel+`})`, "{{switch_member}}"))).
		WithPanel(panel("Sessions started", "short",
			"Sessions in which a controller became each switch's primary in the interval: after a switch or its agent restarted it pushed the pipeline, which starts the switch empty (distcache_fabric_pipeline_pushes_total); after another controller left it took the switch over with its cache.").
			WithTarget(query(`sum by (switch_member) (increase(distcache_fabric_switch_sessions_total{`+clusterSel+`}[$__rate_interval]))`, "{{switch_member}}"))).
		WithPanel(panel("Lease renewals", "ops",
			"Serving lease renewals per second, and renewals that left a switch without a lease (its member not Active). No renewals: the controller cannot read the map, and the switch stops serving cached values when its lease ends.").
			WithTarget(query(fabricRate("lease_renewals"), "{{switch_member}} renewed")).
			WithTarget(query(fabricRate("lease_denied"), "{{switch_member}} denied"))).
		WithPanel(panel("Hot keys", "ops",
			"Hot keys the switches report per second (Count-Min sketch over the threshold, Bloom filter not yet set) and the keys the controller gives a slot and evicts.").
			WithTarget(query(fabricRate("hot_key_reports"), "{{switch_member}} reported")).
			WithTarget(query(fabricRate("keys_inserted"), "{{switch_member}} inserted")).
			WithTarget(query(fabricRate("keys_evicted"), "{{switch_member}} evicted"))).
		WithPanel(panel("Slot fills", "ops",
			"Slots filled per second by the FETCH_REPLY of an inserted key, and fills the switch did not apply (a write raced the fetch: it is fetched again).").
			WithTarget(query(fabricRate("fills"), "{{switch_member}} filled")).
			WithTarget(query(fabricRate("fills_refused"), "{{switch_member}} refused"))).
		WithPanel(panel("Ports up", "short",
			"Ports each switch reports up over gNMI (0 until it reports, or without a gNMI address); every replica of the operator watches them.").
			WithTarget(query(`max by (switch_member) (distcache_fabric_ports_up{`+clusterSel+`})`, "{{switch_member}}")))
}
