package dashboards_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distcache/distcache/dashboards"
)

var update = flag.Bool("update", false, "rewrite the committed dashboard JSON (make dashboards)")

// TestCommittedJSON renders every dashboard and compares it with its
// committed <uid>.json; -update rewrites them.
func TestCommittedJSON(t *testing.T) {
	all, err := dashboards.All()
	if err != nil {
		t.Fatal(err)
	}
	for uid, d := range all {
		got, err := json.MarshalIndent(d, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, '\n')
		path := uid + ".json"
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("dashboards/%s differs from what the code renders (%v): run `make dashboards`", path, err)
		}
	}
	files, err := filepath.Glob("*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(all) {
		t.Errorf("dashboards/ holds %v, want one file per dashboard (%d)", files, len(all))
	}
}

// panelJSON is what the panels' checks read of the rendered JSON.
type panelJSON struct {
	Type        string `json:"type"`
	Title       string `json:"title"`
	Description string `json:"description"`
	FieldConfig struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// TestEveryPanelHasAUnitAndAQuery checks the committed dashboards: every
// panel has a unit, a description and at least one query, and the
// dashboards have the namespace, cluster and layer variables.
func TestEveryPanelHasAUnitAndAQuery(t *testing.T) {
	files, err := filepath.Glob("*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards (%v)", err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Panels     []panelJSON `json:"panels"`
			Templating struct {
				List []struct {
					Name string `json:"name"`
				} `json:"list"`
			} `json:"templating"`
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		vars := map[string]bool{}
		for _, v := range d.Templating.List {
			vars[v.Name] = true
		}
		if !vars["namespace"] || !vars["cluster"] || !vars["layer"] {
			t.Errorf("%s: variables %v, want namespace, cluster and layer", f, vars)
		}
		for _, p := range d.Panels {
			if p.Type == "row" {
				continue
			}
			if p.FieldConfig.Defaults.Unit == "" || p.Description == "" || len(p.Targets) == 0 {
				t.Errorf("%s: panel %q has unit %q, description %q, %d queries", f, p.Title, p.FieldConfig.Defaults.Unit, p.Description, len(p.Targets))
			}
		}
	}
}

// TestQueriesCoverEveryDashboard checks what the live tests evaluate:
// every dashboard has queries, every query selects the cluster variable,
// and only the operator's are Kubernetes-only.
func TestQueriesCoverEveryDashboard(t *testing.T) {
	queries, err := dashboards.Queries()
	if err != nil {
		t.Fatal(err)
	}
	perDashboard := map[string]int{}
	for _, q := range queries {
		perDashboard[q.Dashboard]++
		if q.Kubernetes != (q.Dashboard == "DistCache / Operator") {
			t.Errorf("%s / %s: Kubernetes-only %v", q.Dashboard, q.Panel, q.Kubernetes)
		}
		if e := q.Expand("default", "shop"); strings.Contains(e, "$") {
			t.Errorf("%s / %s: variables left in %s", q.Dashboard, q.Panel, e)
		}
	}
	all, err := dashboards.All()
	if err != nil {
		t.Fatal(err)
	}
	if len(perDashboard) != len(all) {
		t.Fatalf("queries of %d dashboards (%v), want all %d", len(perDashboard), perDashboard, len(all))
	}
}
