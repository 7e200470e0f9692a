package charts_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/distcache/distcache/internal/testing/kubetest"
)

// scrapeJob is the part of a Prometheus scrape configuration compared
// with the chart's monitors.
type scrapeJob struct {
	JobName        string           `json:"job_name"`
	HonorLabels    bool             `json:"honor_labels"`
	SDConfigs      []map[string]any `json:"kubernetes_sd_configs"`
	RelabelConfigs []relabelConfig  `json:"relabel_configs"`
}

type relabelConfig struct {
	SourceLabels []string `json:"source_labels"`
	TargetLabel  string   `json:"target_label"`
	Regex        string   `json:"regex"`
	Action       string   `json:"action"`
}

// TestScrapeConfigsMatchTheMonitors keeps config/prometheus/scrape-configs.yaml
// (for a Prometheus without the Prometheus Operator) in step with the
// chart's PodMonitor and ServiceMonitor: the data-plane job keeps the pods
// the PodMonitor selects and sets every label its relabelings set, from
// the same source; the operator job honours the operator's labels as the
// ServiceMonitor does.
func TestScrapeConfigsMatchTheMonitors(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(kubetest.RepoRoot(), "config", "prometheus", "scrape-configs.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var jobs []scrapeJob
	if err := yaml.UnmarshalStrict(raw, &jobs); err != nil {
		t.Fatal(err)
	}
	job := func(name string) scrapeJob {
		i := slices.IndexFunc(jobs, func(j scrapeJob) bool { return j.JobName == name })
		if i < 0 {
			t.Fatalf("no job %s in the scrape configurations", name)
		}
		return jobs[i]
	}
	dataPlane, operator := job("distcache-data-plane"), job("distcache-operator")
	objs := objects(t, mustRender(t, loadChart(t, chartDir()), newValues(withMonitoring())).Manifest)
	pm := find(objs, "PodMonitor", releaseName+"-data-plane")
	sm := find(objs, "ServiceMonitor", releaseName)
	if pm == nil || sm == nil {
		t.Fatal("no PodMonitor or ServiceMonitor rendered")
	}
	keep := ""
	for _, r := range dataPlane.RelabelConfigs {
		if r.Action == "keep" {
			keep = r.Regex
		}
	}
	selected, _, _ := unstructured.NestedStringMap(pm.Object, "spec", "selector", "matchLabels")
	for label, value := range selected {
		if !strings.Contains(keep, value) {
			t.Errorf("the data-plane job keeps %q, not the PodMonitor's %s=%s", keep, label, value)
		}
	}
	endpoints, _, _ := unstructured.NestedSlice(pm.Object, "spec", "podMetricsEndpoints")
	for _, e := range endpoints {
		relabelings, _, _ := unstructured.NestedSlice(e.(map[string]any), "relabelings")
		for _, r := range relabelings {
			rm := r.(map[string]any)
			target, _, _ := unstructured.NestedString(rm, "targetLabel")
			sources, _, _ := unstructured.NestedStringSlice(rm, "sourceLabels")
			if !slices.ContainsFunc(dataPlane.RelabelConfigs, func(c relabelConfig) bool {
				return c.TargetLabel == target && slices.Equal(c.SourceLabels, sources)
			}) {
				t.Errorf("the data-plane job does not set %s from %v as the PodMonitor does", target, sources)
			}
		}
	}
	smEndpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	honor, _, _ := unstructured.NestedBool(smEndpoints[0].(map[string]any), "honorLabels")
	if honor != operator.HonorLabels {
		t.Errorf("operator job honor_labels %v, the ServiceMonitor's honorLabels %v", operator.HonorLabels, honor)
	}
}
