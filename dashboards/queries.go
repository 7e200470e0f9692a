package dashboards

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// kubernetesTag marks a dashboard whose series only exist on Kubernetes
// (the operator's).
const kubernetesTag = "kubernetes"

// switchesTag marks a dashboard whose series only exist in a cluster with
// switch-backed layers.
const switchesTag = "switches"

// Query is the query of one dashboard panel, for checking it against a
// live Prometheus.
type Query struct {
	// Dashboard and Panel are the titles.
	Dashboard, Panel string
	// Expr is the PromQL expression, with the dashboard's variables.
	Expr string
	// Kubernetes is true when only a cluster run by the operator has the
	// series (the operator's dashboard).
	Kubernetes bool
	// Switches is true when only a cluster with switch-backed layers has
	// the series (the switches' dashboard).
	Switches bool
}

// Queries returns every query of every dashboard's panels, ordered by
// dashboard uid.
func Queries() ([]Query, error) {
	all, err := All()
	if err != nil {
		return nil, err
	}
	uids := make([]string, 0, len(all))
	for uid := range all {
		uids = append(uids, uid)
	}
	slices.Sort(uids)
	var out []Query
	for _, uid := range uids {
		raw, err := json.Marshal(all[uid])
		if err != nil {
			return nil, fmt.Errorf("cannot render dashboard %s: %w", uid, err)
		}
		var d struct {
			Title  string   `json:"title"`
			Tags   []string `json:"tags"`
			Panels []struct {
				Title   string `json:"title"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			return nil, fmt.Errorf("cannot read dashboard %s back: %w", uid, err)
		}
		for _, p := range d.Panels {
			for _, t := range p.Targets {
				out = append(out, Query{Dashboard: d.Title, Panel: p.Title, Expr: t.Expr,
					Kubernetes: slices.Contains(d.Tags, kubernetesTag), Switches: slices.Contains(d.Tags, switchesTag)})
			}
		}
	}
	return out, nil
}

// Expand returns q's expression as Grafana sends it with namespace and
// cluster selected (namespace ".*" is "All", which a standalone cluster's
// series, without a namespace, need), every layer, and a rate interval of
// a minute.
func (q Query) Expand(namespace, cluster string) string {
	return strings.NewReplacer("$__rate_interval", "1m", "$namespace", namespace, "$cluster", cluster, "$layer", ".*").Replace(q.Expr)
}
