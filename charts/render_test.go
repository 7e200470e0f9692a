package charts_test

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/distcache/distcache/internal/buildinfo"
	"github.com/distcache/distcache/internal/testing/kubetest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// The release the render tests name.
const (
	releaseName      = "distcache"
	releaseNamespace = "distcache-system"
)

// chartDir is charts/distcache.
func chartDir() string { return filepath.Join(kubetest.RepoRoot(), "charts", "distcache") }

// valuesOption sets one value of a values set.
type valuesOption func(map[string]any)

// newValues is a values set: the chart's defaults changed by opts.
func newValues(opts ...valuesOption) map[string]any {
	v := map[string]any{}
	for _, o := range opts {
		o(v)
	}
	return v
}

// set sets the value at a dotted path ("monitoring.serviceMonitor.enabled").
func set(path string, value any) valuesOption {
	return func(v map[string]any) {
		keys := strings.Split(path, ".")
		m := v
		for _, k := range keys[:len(keys)-1] {
			next, ok := m[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[k] = next
			}
			m = next
		}
		m[keys[len(keys)-1]] = value
	}
}

// withMonitoring turns on every Prometheus and Grafana object.
func withMonitoring() valuesOption {
	return func(v map[string]any) {
		for _, o := range []valuesOption{
			set("monitoring.release", "kube-prometheus-stack"),
			set("monitoring.serviceMonitor.enabled", true),
			set("monitoring.podMonitor.enabled", true),
			set("monitoring.prometheusRule.enabled", true),
			set("grafana.dashboards.enabled", true),
		} {
			o(v)
		}
	}
}

// withWatchNamespace limits the operator to ns.
func withWatchNamespace(ns string) valuesOption { return set("watchNamespace", ns) }

// valuesSets are the values sets with golden renders.
var valuesSets = []struct {
	name   string
	values map[string]any
}{
	{"default", newValues()},
	{"monitoring", newValues(withMonitoring())},
	{"single-namespace", newValues(withWatchNamespace("shop"), set("networkPolicy.enabled", true))},
}

// loadChart loads the chart in dir.
func loadChart(t *testing.T, dir string) *chart.Chart {
	t.Helper()
	c, err := loader.Load(dir)
	if err != nil {
		t.Fatalf("cannot load chart %s: %v", dir, err)
	}
	return c
}

// render renders c as `helm template` does (no API server), with the CRDs
// left out.
func render(c *chart.Chart, values map[string]any) (*release.Release, error) {
	in := action.NewInstall(&action.Configuration{})
	in.ClientOnly = true
	in.DryRun = true
	in.ReleaseName = releaseName
	in.Namespace = releaseNamespace
	return in.Run(c, values)
}

// mustRender renders c or fails the test.
func mustRender(t *testing.T, c *chart.Chart, values map[string]any) *release.Release {
	t.Helper()
	rel, err := render(c, values)
	if err != nil {
		t.Fatalf("cannot render the chart: %v", err)
	}
	return rel
}

// objects parses a rendered manifest into its objects.
func objects(t *testing.T, manifest string) []*unstructured.Unstructured {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifest)))
	var out []*unstructured.Unstructured
	for range 1000 {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("cannot read the manifest: %v", err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			t.Fatalf("cannot parse a rendered object: %v\n%s", err, doc)
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	t.Fatal("more than 1000 documents in the manifest")
	return nil
}

// find is the rendered object of kind and name, or nil.
func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// kinds counts the rendered objects by kind.
func kinds(objs []*unstructured.Unstructured) map[string]int {
	n := map[string]int{}
	for _, o := range objs {
		n[o.GetKind()]++
	}
	return n
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("cannot read golden file (`make chart-golden` writes it): %v", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the render (-golden +render; `make chart-golden` rewrites it):\n%s", path, cmp.Diff(string(want), got))
	}
}

// TestGoldenRenders renders every values set and compares the manifest and
// NOTES.txt with the golden files.
func TestGoldenRenders(t *testing.T) {
	c := loadChart(t, chartDir())
	for _, vs := range valuesSets {
		t.Run(vs.name, func(t *testing.T) {
			rel := mustRender(t, c, vs.values)
			golden(t, vs.name+".yaml", rel.Manifest)
			golden(t, vs.name+".notes.txt", rel.Info.Notes)
		})
	}
}

// TestRenderedObjects checks what each values set must render, beyond the
// golden files' bytes: which kinds, in which namespace, with which flags.
func TestRenderedObjects(t *testing.T) {
	c := loadChart(t, chartDir())
	for _, tc := range []struct {
		name      string
		values    map[string]any
		wantKinds map[string]int
		wantArgs  []string
	}{
		{
			name:   "default",
			values: newValues(),
			wantKinds: map[string]int{
				"ServiceAccount": 1, "ClusterRole": 2, "ClusterRoleBinding": 1, "Role": 1, "RoleBinding": 2,
				"Service": 1, "Deployment": 1,
			},
			wantArgs: []string{"operator", "--leader-elect", "--leader-election-namespace=distcache-system",
				"--metrics-addr=:8080", "--health-probe-addr=:8081", "--log-level=info", "--data-plane-image=ghcr.io/distcache/distcache:v0.1.0"},
		},
		{
			// The alerting rules as a PrometheusRule, each dashboard as a
			// ConfigMap.
			name:   "monitoring",
			values: newValues(withMonitoring()),
			wantKinds: map[string]int{
				"ServiceAccount": 1, "ClusterRole": 2, "ClusterRoleBinding": 1, "Role": 1, "RoleBinding": 2,
				"Service": 1, "Deployment": 1, "ServiceMonitor": 1, "PodMonitor": 1, "PrometheusRule": 1, "ConfigMap": chartDashboards(t),
			},
		},
		{
			name:   "single-namespace",
			values: newValues(withWatchNamespace("shop")),
			wantKinds: map[string]int{
				"ServiceAccount": 1, "Role": 2, "RoleBinding": 2, "Service": 1, "Deployment": 1,
			},
			wantArgs: []string{"operator", "--leader-elect", "--leader-election-namespace=distcache-system",
				"--metrics-addr=:8080", "--health-probe-addr=:8081", "--namespace=shop", "--log-level=info",
				"--data-plane-image=ghcr.io/distcache/distcache:v0.1.0"},
		},
		{
			name:   "no leader election",
			values: newValues(set("leaderElection.enabled", false), set("image.tag", "v0.2.0-rc.1")),
			wantKinds: map[string]int{
				"ServiceAccount": 1, "ClusterRole": 2, "ClusterRoleBinding": 1, "RoleBinding": 1, "Service": 1, "Deployment": 1,
			},
			// The data plane runs the operator's own image: a new tag rolls it.
			wantArgs: []string{"operator", "--metrics-addr=:8080", "--health-probe-addr=:8081", "--log-level=info",
				"--data-plane-image=ghcr.io/distcache/distcache:v0.2.0-rc.1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := objects(t, mustRender(t, c, tc.values).Manifest)
			if got := kinds(objs); !maps.Equal(got, tc.wantKinds) {
				t.Errorf("rendered kinds %v, want %v", got, tc.wantKinds)
			}
			dep := find(objs, "Deployment", releaseName)
			if dep == nil {
				t.Fatal("no Deployment rendered")
			}
			containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
			if len(containers) != 1 {
				t.Fatalf("Deployment has %d containers, want 1", len(containers))
			}
			ctr, _ := containers[0].(map[string]any)
			if tc.wantArgs != nil {
				args, _, _ := unstructured.NestedStringSlice(ctr, "args")
				if !slices.Equal(args, tc.wantArgs) {
					t.Errorf("operator args %q, want %q", args, tc.wantArgs)
				}
			}
			wantImage := "ghcr.io/distcache/distcache:" + c.Metadata.AppVersion
			if tag, _, _ := unstructured.NestedString(tc.values, "image", "tag"); tag != "" {
				wantImage = "ghcr.io/distcache/distcache:" + tag
			}
			if img, _, _ := unstructured.NestedString(ctr, "image"); img != wantImage {
				t.Errorf("image %q, want %q", img, wantImage)
			}
			for _, o := range objs {
				if o.GetKind() == "ClusterRole" || o.GetKind() == "ClusterRoleBinding" {
					continue
				}
				ns := o.GetNamespace()
				if o.GetKind() == "RoleBinding" && o.GetName() == releaseName+"-secrets" {
					continue // in each of secretNamespaces (TestSecretsOnlyInListedNamespaces)
				}
				if ns != releaseNamespace && ns != "shop" {
					t.Errorf("%s %s in namespace %q", o.GetKind(), o.GetName(), ns)
				}
			}
		})
	}
}

// TestRestrictedPodSecurity checks the operator's pod against the
// restricted Pod Security Standard's requirements.
func TestRestrictedPodSecurity(t *testing.T) {
	objs := objects(t, mustRender(t, loadChart(t, chartDir()), newValues()).Manifest)
	dep := find(objs, "Deployment", releaseName)
	if dep == nil {
		t.Fatal("no Deployment rendered")
	}
	pod, _, _ := unstructured.NestedMap(dep.Object, "spec", "template", "spec")
	containers, _, _ := unstructured.NestedSlice(pod, "containers")
	ctr, _ := containers[0].(map[string]any)
	for _, tc := range []struct {
		obj  map[string]any
		path []string
		want any
	}{
		{pod, []string{"securityContext", "runAsNonRoot"}, true},
		{pod, []string{"securityContext", "runAsUser"}, int64(65532)},
		{pod, []string{"securityContext", "seccompProfile", "type"}, "RuntimeDefault"},
		{ctr, []string{"securityContext", "allowPrivilegeEscalation"}, false},
		{ctr, []string{"securityContext", "readOnlyRootFilesystem"}, true},
		{ctr, []string{"securityContext", "capabilities", "drop"}, []any{"ALL"}},
		{ctr, []string{"livenessProbe", "httpGet", "path"}, "/healthz"},
		{ctr, []string{"readinessProbe", "httpGet", "path"}, "/readyz"},
	} {
		got, _, err := unstructured.NestedFieldNoCopy(tc.obj, tc.path...)
		if err != nil {
			t.Fatal(err)
		}
		if !equalJSON(t, got, tc.want) {
			t.Errorf("%s = %v, want %v", strings.Join(tc.path, "."), got, tc.want)
		}
	}
}

// TestLintStrict runs `helm lint --strict` on the chart for every values set.
func TestLintStrict(t *testing.T) {
	for _, vs := range valuesSets {
		t.Run(vs.name, func(t *testing.T) {
			l := action.NewLint()
			l.Strict = true
			l.Namespace = releaseNamespace
			res := l.Run([]string{chartDir()}, vs.values)
			for _, m := range res.Messages {
				t.Logf("lint: %s", m)
			}
			if len(res.Errors) > 0 {
				t.Errorf("helm lint --strict: %v", errors.Join(res.Errors...))
			}
		})
	}
}

// equalJSON compares two values by their JSON encodings.
func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := yaml.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := yaml.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(ja, jb)
}

// TestOperatorPodLabels checks the labels of the operator's pods that the
// Chaos Mesh experiments of chaos/ select (pod-kill-operator.yaml, the
// Workflow), and that the data-plane PodMonitor's selector cannot pick the
// operator's pods.
func TestOperatorPodLabels(t *testing.T) {
	objs := objects(t, mustRender(t, loadChart(t, chartDir()), newValues(withMonitoring())).Manifest)
	dep := find(objs, "Deployment", releaseName)
	if dep == nil {
		t.Fatal("no Deployment rendered")
	}
	labels, _, _ := unstructured.NestedStringMap(dep.Object, "spec", "template", "metadata", "labels")
	for k, v := range map[string]string{"app.kubernetes.io/name": "distcache", "app.kubernetes.io/component": "operator"} {
		if labels[k] != v {
			t.Errorf("operator pod label %s=%q, want %q (chaos/pod-kill-operator.yaml selects it)", k, labels[k], v)
		}
	}
	pm := find(objs, "PodMonitor", releaseName+"-data-plane")
	if pm == nil {
		t.Fatal("no PodMonitor rendered")
	}
	want, _, _ := unstructured.NestedStringMap(pm.Object, "spec", "selector", "matchLabels")
	if len(want) == 0 {
		t.Fatal("the PodMonitor has no matchLabels")
	}
	selected := true
	for k, v := range want {
		selected = selected && labels[k] == v
	}
	if selected {
		t.Errorf("the PodMonitor's matchLabels %v select the operator's pods %v", want, labels)
	}
}

// TestAppVersionIsTheRelease checks that the chart deploys the image this
// source tree builds: appVersion is buildinfo.Release and the default
// repository buildinfo.Repository.
func TestAppVersionIsTheRelease(t *testing.T) {
	c := loadChart(t, chartDir())
	if c.Metadata.AppVersion != buildinfo.Release {
		t.Errorf("Chart.yaml appVersion %q, want buildinfo.Release %q", c.Metadata.AppVersion, buildinfo.Release)
	}
	if repo, _, _ := unstructured.NestedString(c.Values, "image", "repository"); repo != buildinfo.Repository {
		t.Errorf("values.yaml image.repository %q, want buildinfo.Repository %q", repo, buildinfo.Repository)
	}
}
