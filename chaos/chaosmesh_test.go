package chaos_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/distcache/distcache/internal/testing/kubetest"
)

// chaosMeshModule is the module that pins the Chaos Mesh API: hack/chaosmesh.
func chaosMeshModule() string { return filepath.Join(kubetest.RepoRoot(), "hack", "chaosmesh") }

// TestChaosMeshCRDsUpToDate regenerates the Chaos Mesh CRDs from the pinned
// API module (hack/chaosmesh/crds.sh, as `make chaos-crds` does) and checks
// that the CRDs the tests install are exactly them.
func TestChaosMeshCRDsUpToDate(t *testing.T) {
	gen := kubetest.ControllerGen(t)
	out := t.TempDir()
	kubetest.Generate(t, []string{"CONTROLLER_GEN=" + gen}, "bash", filepath.Join(chaosMeshModule(), "crds.sh"), out)
	committed, err := filepath.Rel(kubetest.RepoRoot(), kubetest.ChaosMeshCRDDir())
	if err != nil {
		t.Fatal(err)
	}
	kubetest.SameYAMLFiles(t, out, committed, "make chaos-crds")
}

// chaosMeshChecker builds hack/chaosmesh, the program that runs Chaos
// Mesh's own defaulting and validation webhook code over manifests.
func chaosMeshChecker(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "chaosmesh")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	cmd.Dir = chaosMeshModule()
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cannot build hack/chaosmesh: %v\n%s", err, b)
	}
	return bin
}

// TestChaosMeshWebhooksAccept runs Chaos Mesh's admission checks (the
// validation the chaos-controller-manager's webhook does on a cluster and
// envtest does not: durations, cron schedules, Workflow template references,
// NetworkChaos directions) over every experiment, and shows on broken copies
// that they can fail.
func TestChaosMeshWebhooksAccept(t *testing.T) {
	checker := chaosMeshChecker(t)
	var files []string
	chaosDocs := 0
	for _, f := range manifestFiles(t) {
		files = append(files, filepath.Join(chaosDir(), f))
		for _, d := range readDocuments(t, f) {
			if d.obj.GroupVersionKind().Group == chaosMeshGroup {
				chaosDocs++
			}
		}
	}
	out, err := exec.CommandContext(t.Context(), checker, files...).CombinedOutput()
	if err != nil {
		t.Fatalf("Chaos Mesh's webhooks refuse experiments: %v\n%s", err, out)
	}
	if want := fmt.Sprintf("%d chaos-mesh.org documents checked, 0 rejected", chaosDocs); !strings.Contains(string(out), want) {
		t.Fatalf("checker said %q, want %q", out, want)
	}

	broken := []struct {
		name, file, old, new, wantInError string
	}{
		{"bad duration", "pod-failure-cache-node.yaml", "duration: 2m", "duration: 2 minutes", "duration"},
		{"missing workflow template", "workflow-faults.yaml", "- recover-loss\n", "- recover-lost\n", "recover-lost"},
		{"bad cron schedule", "schedule-pod-kill-cache-node.yaml", `schedule: "@every 5m"`, `schedule: "every 5m"`, "schedule"},
		{"external target in both directions", "network-delay-shims.yaml", "direction: both", "direction: both\n  externalTargets: [198.18.0.1]", "direction"},
	}
	dir := t.TempDir()
	for _, tc := range broken {
		t.Run(tc.name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(chaosDir(), tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(b, []byte(tc.old)) {
				t.Fatalf("%s no longer contains %q", tc.file, tc.old)
			}
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml")
			if err := os.WriteFile(path, bytes.Replace(b, []byte(tc.old), []byte(tc.new), 1), 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := exec.CommandContext(t.Context(), checker, path).CombinedOutput()
			if err == nil {
				t.Fatalf("the checker accepted a %s:\n%s", tc.name, out)
			}
			if !strings.Contains(string(out), path) || !strings.Contains(string(out), tc.wantInError) {
				t.Fatalf("output %q does not name %s and %q", out, path, tc.wantInError)
			}
		})
	}
}
