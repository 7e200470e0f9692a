package manager_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distcache/distcache/internal/testing/kubetest"
)

// TestRBACUpToDate regenerates the operator's RBAC from the
// +kubebuilder:rbac markers and checks that config/rbac holds exactly it.
func TestRBACUpToDate(t *testing.T) {
	gen := kubetest.ControllerGen(t)
	for _, tc := range []struct{ role, paths, dir string }{
		// The ClusterRole: every reconciler and the manager.
		{"distcache-operator", "./operator/controller/...;./operator/manager/...", "config/rbac"},
		// The Secret permissions, bound per namespace (package secretaccess).
		{"distcache-operator-secrets", "./operator/secretaccess/...", "config/rbac/secrets"},
	} {
		out := t.TempDir()
		kubetest.Generate(t, nil, gen, "rbac:roleName="+tc.role, "paths="+tc.paths, "output:rbac:artifacts:config="+out)
		kubetest.SameYAMLFiles(t, out, tc.dir, "make manifests")
	}
}

// TestEveryMarkerGenerated finds every +kubebuilder:rbac marker of the
// operator in a package that one of the two generations reads: a marker
// elsewhere would grant nothing.
func TestEveryMarkerGenerated(t *testing.T) {
	root := kubetest.RepoRoot()
	err := filepath.WalkDir(filepath.Join(root, "operator"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		covered := strings.HasPrefix(rel, "operator/controller/") || strings.HasPrefix(rel, "operator/manager/") ||
			strings.HasPrefix(rel, "operator/secretaccess/")
		if bytes.Contains(raw, []byte("+kubebuilder:rbac:")) && !covered {
			t.Errorf("%s has +kubebuilder:rbac markers outside the generated paths (Makefile OPERATOR_RBAC_PATHS)", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
