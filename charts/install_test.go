package charts_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/distcache/distcache/internal/testing/kubetest"
)

var env *kubetest.Env

// TestMain starts the control plane, except with -update (make manifests,
// make chart-golden), which rewrites golden renders and needs none: the
// tests that need it then skip.
func TestMain(m *testing.M) {
	klog.SetLogger(forbidden.logger()) // before anything logs: SetLogger is not safe for concurrent use
	flag.Parse()
	if *update {
		os.Exit(m.Run())
	}
	kubetest.Main(m, &env, kubetest.WithPrometheusOperator())
}

// needAPIServer skips a test that needs the control plane when TestMain
// started none.
func needAPIServer(t *testing.T) {
	t.Helper()
	if env == nil {
		t.Skip("no API server with -update")
	}
}

// warnings collects the API server's warnings: an unknown field in an
// object is dropped with a warning (the default field validation), so a
// template that misspells a field shows up here rather than as an error.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.list
	w.list = nil
	return l
}

// helmClient is Helm's action configuration for namespace ns on the envtest
// API server, as the helm command builds it from a kubeconfig; the API
// server's warnings go to w.
func helmClient(t *testing.T, ns string, w *warnings) *action.Configuration {
	t.Helper()
	_, kubeconfig, err := env.Kubectl(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &kubeconfig
	flags.Namespace = &ns
	flags.WrapConfigFn = func(c *rest.Config) *rest.Config {
		c.WarningHandlerWithContext = w
		return c
	}
	cfg := new(action.Configuration)
	if err := cfg.Init(flags, ns, "secret", t.Logf); err != nil {
		t.Fatalf("cannot initialise Helm: %v", err)
	}
	return cfg
}

// install runs `helm install --create-namespace`.
func install(t *testing.T, cfg *action.Configuration, name, ns string, c *chart.Chart, values map[string]any) *release.Release {
	t.Helper()
	in := action.NewInstall(cfg)
	in.ReleaseName = name
	in.Namespace = ns
	in.CreateNamespace = true
	in.Timeout = time.Minute
	rel, err := in.RunWithContext(t.Context(), c, values)
	if err != nil {
		t.Fatalf("helm install %s: %v", name, err)
	}
	return rel
}

// get reads o's current state from the API server.
func get(t *testing.T, o *unstructured.Unstructured) error {
	t.Helper()
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(o.GroupVersionKind())
	return env.Client.Get(t.Context(), client.ObjectKeyFromObject(o), cur)
}

// checkInstalled checks that every object of rel's manifest exists and
// that the API server kept every field (no unknown-field warnings).
func checkInstalled(t *testing.T, rel *release.Release, w *warnings) {
	t.Helper()
	objs := objects(t, rel.Manifest)
	if len(objs) == 0 {
		t.Fatal("the release has no objects")
	}
	for _, o := range objs {
		if err := get(t, o); err != nil {
			t.Errorf("%s %s/%s of the release: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
	if l := w.take(); len(l) > 0 {
		t.Errorf("the API server warned about the chart's objects:\n%s", strings.Join(l, "\n"))
	}
}

// TestWarningsCatchUnknownFields shows that checkInstalled's warning check
// can fail: the API server warns about a misspelt ServiceMonitor field.
func TestWarningsCatchUnknownFields(t *testing.T) {
	needAPIServer(t)
	w := &warnings{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandlerWithContext = w
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	sm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
		"metadata": map[string]any{"name": "misspelt", "namespace": "default"},
		"spec": map[string]any{
			"selector":  map[string]any{},
			"endpoints": []any{map[string]any{"port": "metrics", "intervall": "30s"}},
		},
	}}
	if err := c.Create(t.Context(), sm); err != nil {
		t.Fatalf("cannot create the ServiceMonitor: %v", err)
	}
	if l := w.take(); len(l) != 1 || !strings.Contains(l[0], "intervall") {
		t.Errorf("warnings %q, want one about the unknown field intervall", l)
	}
}

// TestInstallUpgradeUninstall installs the chart on the API server in each
// mode, every object (ServiceMonitor, PodMonitor and PrometheusRule against
// prometheus-operator's CRDs) passing its validation; upgrades the first
// release with the sample CacheClusters of config/samples in place, which
// keeps them; and uninstalls it, which leaves the CRDs and the CacheClusters.
func TestInstallUpgradeUninstall(t *testing.T) {
	needAPIServer(t)
	// A copy with a dashboard and an alert file, so that every kind the
	// chart can render is installed.
	full := loadChart(t, withTestFiles(t))
	plain := loadChart(t, chartDir())

	// Single-namespace mode first, then uninstalled: its Role lands in the
	// watched namespace, and no ClusterRole is created.
	t.Run("single-namespace", func(t *testing.T) {
		w := &warnings{}
		cfg := helmClient(t, "shop-operator", w)
		if err := env.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}); err != nil {
			t.Fatal(err)
		}
		rel := install(t, cfg, "dc-shop", "shop-operator", plain, newValues(withWatchNamespace("shop"), set("networkPolicy.enabled", true)))
		checkInstalled(t, rel, w)
		for _, o := range objects(t, rel.Manifest) {
			if strings.HasPrefix(o.GetKind(), "Cluster") {
				t.Errorf("%s %s in single-namespace mode", o.GetKind(), o.GetName())
			}
		}
		if _, err := action.NewUninstall(cfg).Run("dc-shop"); err != nil {
			t.Fatalf("helm uninstall: %v", err)
		}
	})

	const name, ns = "distcache", "distcache-system"
	w := &warnings{}
	cfg := helmClient(t, ns, w)
	rel := install(t, cfg, name, ns, full, newValues(withMonitoring()))
	checkInstalled(t, rel, w)
	if n := kinds(objects(t, rel.Manifest)); n["ServiceMonitor"] != 1 || n["PodMonitor"] != 1 || n["PrometheusRule"] != 1 || n["ConfigMap"] != chartDashboards(t)+1 {
		t.Fatalf("installed %v, want a ServiceMonitor, a PodMonitor, a PrometheusRule and a dashboard ConfigMap per dashboard (the chart's and the test's)", n)
	}

	samples := sampleCacheClusters(t, "default")
	for _, cc := range samples {
		if err := env.Client.Create(t.Context(), cc); err != nil {
			t.Fatalf("cannot create the sample CacheCluster %s: %v", cc.GetName(), err)
		}
	}

	up := action.NewUpgrade(cfg)
	up.Namespace = ns
	up.Timeout = time.Minute
	rel2, err := up.RunWithContext(t.Context(), name, plain, newValues(set("replicaCount", 2)))
	if err != nil {
		t.Fatalf("helm upgrade: %v", err)
	}
	checkInstalled(t, rel2, w)
	for _, o := range objects(t, rel.Manifest) {
		if o.GetKind() == "ServiceMonitor" {
			if err := get(t, o); !apierrors.IsNotFound(err) {
				t.Errorf("the ServiceMonitor is still there after an upgrade that turned it off (%v)", err)
			}
		}
	}
	checkSame(t, samples)

	res, err := action.NewUninstall(cfg).Run(name)
	if err != nil {
		t.Fatalf("helm uninstall: %v", err)
	}
	for _, o := range objects(t, rel2.Manifest) {
		if err := get(t, o); !apierrors.IsNotFound(err) {
			t.Errorf("%s %s still there after helm uninstall (%v)", o.GetKind(), o.GetName(), err)
		}
	}
	if res.Info != "" {
		t.Logf("helm uninstall: %s", res.Info)
	}
	checkSame(t, samples)
	for _, crd := range plain.CRDObjects() {
		objs := objects(t, string(crd.File.Data))
		if len(objs) != 1 || objs[0].GetKind() != "CustomResourceDefinition" {
			t.Fatalf("%s is not one CRD", crd.Filename)
		}
		if err := get(t, objs[0]); err != nil {
			t.Errorf("CRD %s after helm uninstall: %v", objs[0].GetName(), err)
		}
	}
}

// sampleCacheClusters are the CacheClusters of config/samples (its
// kustomization's resources), in namespace ns.
func sampleCacheClusters(t *testing.T, ns string) []*unstructured.Unstructured {
	t.Helper()
	dir := filepath.Join(kubetest.RepoRoot(), "config", "samples")
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(b, &k); err != nil {
		t.Fatalf("cannot parse config/samples/kustomization.yaml: %v", err)
	}
	var out []*unstructured.Unstructured
	for _, r := range k.Resources {
		b, err := os.ReadFile(filepath.Join(dir, r))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objects(t, string(b)) {
			o.SetNamespace(ns)
			out = append(out, o)
		}
	}
	if len(out) < 3 {
		t.Fatalf("config/samples has %d CacheClusters, want one per storage mode", len(out))
	}
	return out
}

// checkSame checks that the CacheClusters ccs are still the ones created.
func checkSame(t *testing.T, ccs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range ccs {
		cur := &unstructured.Unstructured{}
		cur.SetGroupVersionKind(o.GroupVersionKind())
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(o), cur); err != nil {
			t.Errorf("the CacheCluster %s is gone: %v", o.GetName(), err)
			continue
		}
		if cur.GetUID() != o.GetUID() {
			t.Errorf("the CacheCluster %s was recreated: uid %s, was %s", o.GetName(), cur.GetUID(), o.GetUID())
		}
	}
}
