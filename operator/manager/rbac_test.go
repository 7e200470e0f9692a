package manager_test

import (
	"testing"

	"github.com/distcache/distcache/internal/testing/kubetest"
)

// TestRBACUpToDate regenerates the operator's RBAC from the
// +kubebuilder:rbac markers and checks that config/rbac holds exactly it.
func TestRBACUpToDate(t *testing.T) {
	gen := kubetest.ControllerGen(t)
	out := t.TempDir()
	kubetest.Generate(t, nil, gen, "rbac:roleName=distcache-operator", "paths=./operator/...", "output:rbac:artifacts:config="+out)
	kubetest.SameYAMLFiles(t, out, "config/rbac", "make manifests")
}
