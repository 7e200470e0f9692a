// Package dashboards builds DistCache's Grafana dashboards in Go with the
// typed Grafana Foundation SDK. The JSON they render is committed next to
// this file (one <uid>.json per dashboard, `make dashboards` rewrites it
// and a test compares), and the Helm chart ships copies as ConfigMaps for
// Grafana's dashboard sidecar. docs/observability.md says what each panel
// shows and what to do when it turns red.
//
// Every query selects by the variables namespace, cluster and (for cache
// nodes) layer, on the labels both runtimes give every series: a
// standalone cluster's targets file and the chart's PodMonitor
// (docs/observability.md, Labels).
package dashboards

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// Selectors of the dashboards' variables, for the label matchers of every
// query.
const (
	clusterSel = `namespace=~"$namespace", cluster=~"$cluster"`
	layerSel   = clusterSel + `, layer=~"$layer"`
)

// All returns every dashboard, keyed by its uid (its JSON file's name).
func All() (map[string]dashboard.Dashboard, error) {
	out := map[string]dashboard.Dashboard{}
	for _, b := range []*dashboard.DashboardBuilder{overview(), nodes(), storage(), operator(), switches()} {
		d, err := b.Build()
		if err != nil {
			return nil, fmt.Errorf("cannot build a dashboard: %w", err)
		}
		out[*d.Uid] = d
	}
	return out, nil
}

// base is a dashboard with DistCache's variables: the Prometheus data
// source, and namespace, cluster and layer, each read from the series.
func base(uid, title, description string) *dashboard.DashboardBuilder {
	return dashboard.NewDashboardBuilder(title).
		Uid(uid).
		Description(description).
		Tags([]string{"distcache"}).
		Refresh("30s").
		Time("now-1h", "now").
		Timezone(common.TimeZoneBrowser).
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").Label("Data source").Type("prometheus")).
		WithVariable(labelVariable("namespace", "Namespace", `label_values(distcache_map_version, namespace)`)).
		WithVariable(labelVariable("cluster", "Cluster", `label_values(distcache_map_version{namespace=~"$namespace"}, cluster)`)).
		WithVariable(labelVariable("layer", "Layer", `label_values(distcache_node_load{namespace=~"$namespace", cluster=~"$cluster"}, layer)`))
}

// labelVariable is a variable listing a label's values, with "All"
// (any value, none included: standalone series have no namespace).
func labelVariable(name, label, query string) *dashboard.QueryVariableBuilder {
	return dashboard.NewQueryVariableBuilder(name).
		Label(label).
		Datasource(datasource()).
		Query(dashboard.StringOrMap{String: &query}).
		Definition(query).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortAlphabeticalAsc).
		IncludeAll(true).
		AllValue(".*")
}

func datasource() common.DataSourceRef {
	typ, uid := "prometheus", "${datasource}"
	return common.DataSourceRef{Type: &typ, Uid: &uid}
}

// panel is a time series panel with a unit and a description.
func panel(title, unit, description string) *timeseries.PanelBuilder {
	return timeseries.NewPanelBuilder().Title(title).Unit(unit).Description(description).Datasource(datasource()).Min(0)
}

// query is a Prometheus range query with its legend.
func query(expr, legend string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().Expr(expr).LegendFormat(legend).Datasource(datasource())
}
