package v1alpha1_test

import (
	"testing"

	"github.com/distcache/distcache/internal/testing/kubetest"
)

// TestCRDsUpToDate regenerates the CRDs from the API types and checks that
// crds/ holds exactly them, byte for byte.
func TestCRDsUpToDate(t *testing.T) {
	gen := kubetest.ControllerGen(t)
	out := t.TempDir()
	kubetest.Generate(t, nil, gen, "crd", "paths=./api/...", "output:crd:artifacts:config="+out)
	kubetest.SameYAMLFiles(t, out, "crds", "make manifests")
}
