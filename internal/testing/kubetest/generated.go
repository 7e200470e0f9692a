package kubetest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// ControllerGenVersion is the controller-gen the Makefile installs.
const ControllerGenVersion = "v0.23.0"

// ControllerGen is the controller-gen binary: CONTROLLER_GEN, else the one
// `make controller-gen` installs into ~/.cache/distcache. It skips the test
// when neither exists.
func ControllerGen(t *testing.T) string {
	t.Helper()
	var candidates []string
	if p := os.Getenv("CONTROLLER_GEN"); p != "" {
		candidates = append(candidates, p)
	}
	if home, err := os.UserHomeDir(); err == nil {
		candidates = append(candidates, filepath.Join(home, ".cache", "distcache", "controller-gen", ControllerGenVersion, "controller-gen"))
	}
	for _, p := range candidates {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	t.Skipf("controller-gen %s not found at %q (set CONTROLLER_GEN or run `make test`, which installs it)", ControllerGenVersion, candidates)
	return ""
}

// Generate runs a generator (controller-gen, a script) with its working
// directory at the repository root and env added to the environment; it
// fails the test with the generator's output when it fails.
func Generate(t *testing.T, env []string, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = RepoRoot()
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %q: %v\n%s", name, args, err, b)
	}
}

// SameYAMLFiles checks that committed (a directory relative to the
// repository root) holds exactly the *.yaml files in generated, byte for
// byte; regenerate names the command that refreshes it.
func SameYAMLFiles(t *testing.T, generated, committed, regenerate string) {
	t.Helper()
	want := yamlFiles(t, generated)
	if len(want) == 0 {
		t.Fatalf("the generator wrote no YAML files into %s", generated)
	}
	dir := filepath.Join(RepoRoot(), committed)
	for _, name := range want {
		w, err := os.ReadFile(filepath.Join(generated, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, name))
		switch {
		case os.IsNotExist(err):
			t.Errorf("%s/%s is missing: run `%s`", committed, name, regenerate)
		case err != nil:
			t.Errorf("cannot read %s/%s: %v", committed, name, err)
		case !bytes.Equal(got, w):
			t.Errorf("%s/%s is stale: run `%s`", committed, name, regenerate)
		}
	}
	for _, name := range yamlFiles(t, dir) {
		if !slices.Contains(want, name) {
			t.Errorf("%s/%s is not generated: remove it or run `%s`", committed, name, regenerate)
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
