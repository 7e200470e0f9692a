package charts_test

import (
	"strings"
	"testing"
)

// TestSchemaRejectsBadValues checks that values.schema.json stops bad
// values before anything renders, with a message that names the value and
// what is wrong with it.
func TestSchemaRejectsBadValues(t *testing.T) {
	c := loadChart(t, chartDir())
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   []string
	}{
		{"misspelt key", newValues(set("replicas", 2)), []string{"additional properties 'replicas' not allowed"}},
		{"zero replicas", newValues(set("replicaCount", 0)), []string{"/replicaCount", "minimum: got 0, want 1"}},
		{"replicas as text", newValues(set("replicaCount", "two")), []string{"/replicaCount", "got string, want integer"}},
		{"pull policy", newValues(set("image.pullPolicy", "Sometimes")), []string{"/image/pullPolicy", "value must be one of 'Always', 'IfNotPresent', 'Never'"}},
		{"tag with a colon", newValues(set("image.tag", "v1:2")), []string{"/image/tag", "does not match pattern"}},
		{"log level", newValues(set("logLevel", "verbose")), []string{"/logLevel", "value must be one of 'debug', 'info', 'warn', 'error'"}},
		{"watch namespace not a DNS label", newValues(withWatchNamespace("Shop_Prod")), []string{"/watchNamespace", "does not match pattern"}},
		{"port out of range", newValues(set("metrics.port", 70000)), []string{"/metrics/port", "maximum: got 70,000, want 65,535"}},
		{"scrape interval", newValues(set("monitoring.serviceMonitor.interval", "30 seconds")), []string{"/monitoring/serviceMonitor/interval", "does not match pattern"}},
		{"monitoring switch as text", newValues(set("monitoring.podMonitor.enabled", "yes")), []string{"/monitoring/podMonitor/enabled", "got string, want boolean"}},
		{"dashboard label", newValues(set("grafana.dashboards.label", "grafana dashboard")), []string{"/grafana/dashboards/label", "does not match pattern"}},
		{"misspelt nested key", newValues(set("monitoring.serviceMonitor.enable", true)), []string{"/monitoring/serviceMonitor", "additional properties 'enable' not allowed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := render(c, tc.values)
			if err == nil {
				t.Fatal("the chart rendered bad values")
			}
			t.Logf("%v", err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
