package v1alpha1_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/distcache/distcache/internal/kubetest"
)

// controllerGenVersion is the controller-gen the Makefile installs.
const controllerGenVersion = "v0.23.0"

// controllerGen is the controller-gen binary: CONTROLLER_GEN, else the one
// `make controller-gen` installs into ~/.cache/distcache; "" when neither
// exists.
func controllerGen(t *testing.T) string {
	t.Helper()
	var candidates []string
	if p := os.Getenv("CONTROLLER_GEN"); p != "" {
		candidates = append(candidates, p)
	}
	if home, err := os.UserHomeDir(); err == nil {
		candidates = append(candidates, filepath.Join(home, ".cache", "distcache", "controller-gen", controllerGenVersion, "controller-gen"))
	}
	for _, p := range candidates {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	t.Logf("looked for controller-gen at %q", candidates)
	return ""
}

// TestCRDsUpToDate regenerates the CRDs from the API types and checks that
// crds/ holds exactly them, byte for byte.
func TestCRDsUpToDate(t *testing.T) {
	gen := controllerGen(t)
	if gen == "" {
		t.Skip("controller-gen " + controllerGenVersion + " not found (set CONTROLLER_GEN or run `make test`, which installs it)")
	}
	root := kubetest.RepoRoot()
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, gen, "crd", "paths=./operator/api/...", "output:crd:artifacts:config="+out)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s crd: %v\n%s", gen, err, b)
	}

	generated := yamlFiles(t, out)
	if len(generated) == 0 {
		t.Fatalf("controller-gen wrote no CRDs into %s", out)
	}
	committed := yamlFiles(t, filepath.Join(root, "crds"))
	for _, name := range generated {
		want, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(root, "crds", name))
		switch {
		case os.IsNotExist(err):
			t.Errorf("crds/%s is missing: run `make manifests`", name)
		case err != nil:
			t.Errorf("cannot read crds/%s: %v", name, err)
		case !bytes.Equal(got, want):
			t.Errorf("crds/%s is stale: run `make manifests`", name)
		}
	}
	for _, name := range committed {
		if !slices.Contains(generated, name) {
			t.Errorf("crds/%s is not generated from operator/api: remove it or run `make manifests`", name)
		}
	}
}

// yamlFiles are the names of the *.yaml files in dir, sorted.
func yamlFiles(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range names {
		names[i] = filepath.Base(n)
	}
	return names
}
