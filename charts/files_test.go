package charts_test

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A dashboard and an alert rule file for copies of the chart, beside the
// chart's own.
const (
	testDashboard = `{"title": "DistCache test", "panels": [], "schemaVersion": 39}`
	testAlerts    = `groups:
  - name: distcache-test
    rules:
      - alert: DistCacheTestAlert
        expr: up{job="distcache"} == 0
        for: 5m
        labels:
          severity: warning
        annotations:
          summary: A DistCache target is down.
`
)

// chartDashboards counts the chart's own dashboards (files/dashboards).
func chartDashboards(t *testing.T) int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartDir(), "files", "dashboards", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	return len(files)
}

// withTestFiles copies the chart and adds a dashboard and an alert rule
// file to the copy.
func withTestFiles(t *testing.T) string {
	t.Helper()
	dir := copyChart(t, chartDir())
	for path, content := range map[string]string{
		"files/dashboards/Cache Overview.json": testDashboard,
		"files/alerts/distcache.yaml":          testAlerts,
	} {
		p := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestDashboardsAndAlertsFromFiles shows the path from the chart's files to
// the objects: each files/dashboards/*.json becomes a ConfigMap with the
// Grafana sidecar's label, the groups of files/alerts/*.yaml one
// PrometheusRule; switched off, neither renders.
func TestDashboardsAndAlertsFromFiles(t *testing.T) {
	c := loadChart(t, withTestFiles(t))
	for _, tc := range []struct {
		name           string
		values         map[string]any
		wantDashboards int
		wantRules      int
		wantLabel      [2]string
	}{
		{"on", newValues(withMonitoring()), chartDashboards(t) + 1, 1, [2]string{"grafana_dashboard", "1"}},
		{"custom label", newValues(withMonitoring(), set("grafana.dashboards.label", "example.com/dashboard"),
			set("grafana.dashboards.labelValue", "distcache")), chartDashboards(t) + 1, 1, [2]string{"example.com/dashboard", "distcache"}},
		{"off", newValues(), 0, 0, [2]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := objects(t, mustRender(t, c, tc.values).Manifest)
			n := kinds(objs)
			if n["ConfigMap"] != tc.wantDashboards || n["PrometheusRule"] != tc.wantRules {
				t.Fatalf("rendered %d dashboard ConfigMaps and %d PrometheusRules, want %d and %d",
					n["ConfigMap"], n["PrometheusRule"], tc.wantDashboards, tc.wantRules)
			}
			if tc.wantDashboards == 0 {
				return
			}
			cm := find(objs, "ConfigMap", releaseName+"-dashboard-cache-overview")
			if cm == nil {
				t.Fatalf("no ConfigMap %s-dashboard-cache-overview", releaseName)
			}
			if got := cm.GetLabels()[tc.wantLabel[0]]; got != tc.wantLabel[1] {
				t.Errorf("dashboard label %s=%q, want %q", tc.wantLabel[0], got, tc.wantLabel[1])
			}
			if got, _, _ := unstructured.NestedString(cm.Object, "data", "cache-overview.json"); got != testDashboard {
				t.Errorf("dashboard data %q, want the file's %q", got, testDashboard)
			}
			pr := find(objs, "PrometheusRule", releaseName)
			if pr == nil {
				t.Fatalf("no PrometheusRule %s", releaseName)
			}
			groups, _, _ := unstructured.NestedSlice(pr.Object, "spec", "groups")
			if len(groups) != 2 {
				t.Fatalf("PrometheusRule has %d groups, want the chart's and the added file's", len(groups))
			}
			g, _ := groups[1].(map[string]any) // files/alerts/distcache.yaml sorts before distcache.rules.yaml's group
			if own, _ := groups[0].(map[string]any); own["name"] == "distcache-test" {
				g = own
			}
			rules, _, _ := unstructured.NestedSlice(g, "rules")
			r, _ := rules[0].(map[string]any)
			if g["name"] != "distcache-test" || len(rules) != 1 || r["alert"] != "DistCacheTestAlert" {
				t.Errorf("PrometheusRule group %v is not the file's", g)
			}
		})
	}
}
