package charts_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/distcache/distcache/alerts"
	"github.com/distcache/distcache/internal/testing/kubetest"
)

// TestCRDsAreTheRepositorys checks that the chart's crds/ holds exactly the
// repository's crds/*.yaml, byte for byte (`make manifests` copies them).
func TestCRDsAreTheRepositorys(t *testing.T) {
	kubetest.SameYAMLFiles(t, filepath.Join(kubetest.RepoRoot(), "crds"), "charts/distcache/crds", "make manifests")
}

// TestRBACFileIsGenerated checks that the chart's files/rbac/role.yaml and
// files/rbac/secrets/role.yaml are config/rbac's, byte for byte (`make
// manifests` copies them).
func TestRBACFileIsGenerated(t *testing.T) {
	for _, dir := range []string{"rbac", "rbac/secrets"} {
		kubetest.SameYAMLFiles(t, filepath.Join(kubetest.RepoRoot(), "config", dir), "charts/distcache/files/"+dir, "make manifests")
	}
}

// TestAlertRulesAreTheRepositorys checks that the chart's
// files/alerts/distcache.rules.yaml is alerts/distcache.rules.yaml, byte for
// byte (`make manifests` copies it), and the only file there.
func TestAlertRulesAreTheRepositorys(t *testing.T) {
	dir := filepath.Join(kubetest.RepoRoot(), "charts", "distcache", "files", "alerts")
	got, err := os.ReadFile(filepath.Join(dir, alerts.FileName))
	if err != nil || !bytes.Equal(got, alerts.Rules) {
		t.Fatalf("charts/distcache/files/alerts/%s differs from alerts/%s (%v): run `make manifests`", alerts.FileName, alerts.FileName, err)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 1 {
		t.Fatalf("charts/distcache/files/alerts holds %d files (%v), want only %s", len(entries), err, alerts.FileName)
	}
}

// TestDashboardsAreTheRepositorys checks that the chart's files/dashboards
// holds exactly dashboards/*.json, byte for byte (`make dashboards` copies
// them).
func TestDashboardsAreTheRepositorys(t *testing.T) {
	root := kubetest.RepoRoot()
	want, err := filepath.Glob(filepath.Join(root, "dashboards", "*.json"))
	if err != nil || len(want) == 0 {
		t.Fatalf("no dashboards/*.json (%v)", err)
	}
	dir := filepath.Join(root, "charts", "distcache", "files", "dashboards")
	for _, w := range want {
		a, err := os.ReadFile(w)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, filepath.Base(w)))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("charts/distcache/files/dashboards/%s differs from dashboards/ (%v): run `make dashboards`", filepath.Base(w), err)
		}
	}
	if got, _ := filepath.Glob(filepath.Join(dir, "*.json")); len(got) != len(want) {
		t.Errorf("charts/distcache/files/dashboards holds %d files, dashboards/ %d: run `make dashboards`", len(got), len(want))
	}
}

// TestPrometheusOperatorCRDsUpToDate regenerates the prometheus-operator
// CRDs from the pinned API module (hack/promoperator/crds.sh, as `make
// prometheus-crds` does) and checks that the CRDs the tests install are
// exactly them.
func TestPrometheusOperatorCRDsUpToDate(t *testing.T) {
	gen := kubetest.ControllerGen(t)
	out := t.TempDir()
	kubetest.Generate(t, []string{"CONTROLLER_GEN=" + gen}, "bash",
		filepath.Join(kubetest.RepoRoot(), "hack", "promoperator", "crds.sh"), out)
	committed, err := filepath.Rel(kubetest.RepoRoot(), kubetest.PrometheusOperatorCRDDir())
	if err != nil {
		t.Fatal(err)
	}
	kubetest.SameYAMLFiles(t, out, committed, "make prometheus-crds")
}

// generatedRBAC is config/rbac/role.yaml: the operator's ClusterRole and
// the Role of its leader-election Lease.
func generatedRBAC(t *testing.T, path string) (operator, lease []rbacv1.PolicyRule) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objects(t, string(b)) {
		switch o.GetKind() {
		case "ClusterRole":
			operator = rules(t, o)
		case "Role":
			lease = rules(t, o)
		}
	}
	if operator == nil || lease == nil {
		t.Fatalf("%s lacks the ClusterRole or the Role", path)
	}
	return operator, lease
}

// rules are the rules of a rendered ClusterRole or Role.
func rules(t *testing.T, o *unstructured.Unstructured) []rbacv1.PolicyRule {
	t.Helper()
	var r rbacv1.ClusterRole
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &r); err != nil {
		t.Fatalf("cannot convert %s %s: %v", o.GetKind(), o.GetName(), err)
	}
	return r.Rules
}

// TestRBACRulesAreGenerated checks that the chart grants the operator
// exactly the rules of config/rbac/role.yaml, in both modes: its ClusterRole
// as a ClusterRole (every namespace) or as a Role in watchNamespace, and the
// Lease Role in the release namespace. A copy of the chart with one more
// rule in files/rbac/role.yaml shows that a new +kubebuilder:rbac marker
// reaches the rendered objects without a template change.
func TestRBACRulesAreGenerated(t *testing.T) {
	extra := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}
	extended := copyChart(t, chartDir())
	origOperator, lease := generatedRBAC(t, filepath.Join(kubetest.RepoRoot(), "config", "rbac", "role.yaml"))
	writeRBAC(t, filepath.Join(extended, "files", "rbac", "role.yaml"), append([]rbacv1.PolicyRule{extra}, origOperator...), lease)

	for _, tc := range []struct {
		name     string
		chart    string
		values   map[string]any
		kind     string
		wantNS   string
		absent   string
		operator []rbacv1.PolicyRule
	}{
		{"cluster-wide", chartDir(), newValues(), "ClusterRole", "", "", origOperator},
		{"single-namespace", chartDir(), newValues(withWatchNamespace("shop")), "Role", "shop", "ClusterRole", append(origOperator, secretRules(t)...)},
		{"new marker", extended, newValues(), "ClusterRole", "", "", append([]rbacv1.PolicyRule{extra}, origOperator...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := objects(t, mustRender(t, loadChart(t, tc.chart), tc.values).Manifest)
			op := find(objs, tc.kind, releaseName)
			if op == nil {
				t.Fatalf("no %s %s rendered", tc.kind, releaseName)
			}
			if op.GetNamespace() != tc.wantNS {
				t.Errorf("%s in namespace %q, want %q", tc.kind, op.GetNamespace(), tc.wantNS)
			}
			if got := rules(t, op); !equality.Semantic.DeepEqual(got, tc.operator) {
				t.Errorf("operator rules differ from config/rbac/role.yaml:\n got %v\nwant %v", got, tc.operator)
			}
			if b := find(objs, tc.kind+"Binding", releaseName); b == nil || b.GetNamespace() != tc.wantNS {
				t.Errorf("no %sBinding %s in namespace %q", tc.kind, releaseName, tc.wantNS)
			}
			if tc.absent != "" && kinds(objs)[tc.absent] != 0 {
				t.Errorf("a %s is rendered in single-namespace mode", tc.absent)
			}
			le := find(objs, "Role", releaseName+"-leader-election")
			if le == nil || le.GetNamespace() != releaseNamespace {
				t.Fatalf("no leader-election Role in the release namespace %s", releaseNamespace)
			}
			if got := rules(t, le); !equality.Semantic.DeepEqual(got, lease) {
				t.Errorf("Lease rules differ from config/rbac/role.yaml:\n got %v\nwant %v", got, lease)
			}
		})
	}
}

// secretRules are config/rbac/secrets/role.yaml's: the operator's Secret
// permissions.
func secretRules(t *testing.T) []rbacv1.PolicyRule {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(kubetest.RepoRoot(), "config", "rbac", "secrets", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objects(t, string(b)) {
		if o.GetKind() == "ClusterRole" {
			return rules(t, o)
		}
	}
	t.Fatal("config/rbac/secrets/role.yaml has no ClusterRole")
	return nil
}

// TestSecretsOnlyInListedNamespaces checks where the chart lets the
// operator touch Secrets: nowhere through its ClusterRole; through a
// ClusterRole of their own bound by a RoleBinding in each namespace of
// secretNamespaces (cluster-wide mode), or through watchNamespace's Role.
func TestSecretsOnlyInListedNamespaces(t *testing.T) {
	want := secretRules(t)
	for _, tc := range []struct {
		name     string
		values   map[string]any
		bindings []string // namespaces of the -secrets RoleBindings
	}{
		{"default", newValues(), []string{"default"}},
		{"listed", newValues(set("secretNamespaces", []any{"shop", "shop", "billing"})), []string{"shop", "billing"}},
		{"none", newValues(set("secretNamespaces", []any{})), nil},
		{"single-namespace", newValues(withWatchNamespace("shop")), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := objects(t, mustRender(t, loadChart(t, chartDir()), tc.values).Manifest)
			if op := find(objs, "ClusterRole", releaseName); op != nil {
				for _, r := range rules(t, op) {
					if slices.Contains(r.Resources, "secrets") {
						t.Errorf("the operator's ClusterRole grants %v on secrets cluster-wide", r.Verbs)
					}
				}
			}
			var got []string
			for _, o := range objs {
				if o.GetKind() == "RoleBinding" && o.GetName() == releaseName+"-secrets" {
					got = append(got, o.GetNamespace())
				}
			}
			if !slices.Equal(got, tc.bindings) {
				t.Errorf("Secret RoleBindings in %v, want %v", got, tc.bindings)
			}
			cr := find(objs, "ClusterRole", releaseName+"-secrets")
			switch {
			case len(tc.bindings) == 0 && cr != nil:
				t.Errorf("ClusterRole %s-secrets rendered with no namespace to bind it in", releaseName)
			case len(tc.bindings) > 0 && (cr == nil || !equality.Semantic.DeepEqual(rules(t, cr), want)):
				t.Errorf("ClusterRole %s-secrets missing or not config/rbac/secrets/role.yaml's rules", releaseName)
			}
		})
	}
}

// writeRBAC writes a role.yaml as controller-gen does: the operator's
// ClusterRole, then the Lease Role.
func writeRBAC(t *testing.T, path string, operator, lease []rbacv1.PolicyRule) {
	t.Helper()
	var out []byte
	for _, o := range []any{
		&rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: "distcache-operator"}, Rules: operator},
		&rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
			ObjectMeta: metav1.ObjectMeta{Name: "distcache-operator", Namespace: "distcache-system"}, Rules: lease},
	} {
		b, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		out = append(append(out, "---\n"...), b...)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// copyChart copies the chart in dir into a temporary directory, for tests
// that add files to it.
func copyChart(t *testing.T, dir string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(dir))
	if err := os.CopyFS(dst, os.DirFS(dir)); err != nil {
		t.Fatalf("cannot copy the chart: %v", err)
	}
	return dst
}

// TestRBACFileMissingFailsTheRender checks that a chart whose
// files/rbac/role.yaml lacks the rules fails to render, saying what to run,
// rather than granting nothing.
func TestRBACFileMissingFailsTheRender(t *testing.T) {
	dir := copyChart(t, chartDir())
	if err := os.WriteFile(filepath.Join(dir, "files", "rbac", "role.yaml"), []byte("---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := render(loadChart(t, dir), newValues())
	if err == nil || !strings.Contains(err.Error(), "files/rbac/role.yaml has no ClusterRole rules: run `make manifests`") {
		t.Errorf("render error %v, want one naming files/rbac/role.yaml and `make manifests`", err)
	}
}
