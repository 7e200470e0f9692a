// Package kindflow applies what the Kind workflow (hack/kind/kind.sh)
// applies besides the chart — the sample managed CacheCluster and the
// benchmark Job — with the real kubectl against a real API server
// (server-side apply), the part of that workflow that runs without a
// container runtime. The chart itself is installed by the chart's tests.
package kindflow

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distcache/distcache/internal/testing/kubetest"
	"github.com/distcache/distcache/operator/controller/cachecluster"
)

var env *kubetest.Env

func TestMain(m *testing.M) { kubetest.Main(m, &env) }

func TestKindFlowManifestsApply(t *testing.T) {
	kubectl, kubeconfig, err := env.Kubectl(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root := kubetest.RepoRoot()
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.CommandContext(t.Context(), kubectl, append([]string{"--kubeconfig", kubeconfig, "-n", "default"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	for _, f := range []string{
		"config/samples/distcache_v1alpha1_cachecluster_managed.yaml",
		"hack/kind/bench-job.yaml",
	} {
		out := run("apply", "--server-side", "--field-manager=kind-flow", "-f", filepath.Join(root, f))
		t.Logf("%s: %s", f, strings.TrimSpace(out))
	}
	// The Job runs as the data-plane ServiceAccount, reads the map
	// ConfigMap and mounts the key Secret the operator names after the
	// sample.
	cc := run("get", "cachecluster", "shop-managed", "-o", "jsonpath={.metadata.name}")
	for jsonpath, want := range map[string]string{
		"{.spec.template.spec.serviceAccountName}":           cachecluster.DataPlaneName(cc),
		"{.spec.template.spec.containers[0].args[1]}":        "--map-configmap=$(POD_NAMESPACE)/" + cachecluster.MapConfigMapName(cc),
		"{.spec.template.spec.volumes[0].secret.secretName}": cachecluster.DataPlaneKeySecretName(cc),
	} {
		if got := run("get", "job", "shop-managed-bench", "-o", "jsonpath="+jsonpath); got != want {
			t.Errorf("bench Job %s = %q, want %q", jsonpath, got, want)
		}
	}
}
