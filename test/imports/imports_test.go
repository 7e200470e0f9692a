// Package imports checks the module's import graph: the core and the data
// plane stand on their own, below both runtimes, and the distcache binary
// links no package that exists only for tests.
package imports

import (
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/distcache/distcache"

// core are the packages that import neither runtime nor Kubernetes: the
// placement and routing core, the topology, hot-key detection, the data
// plane (but kubemap, which reads the map from the Kubernetes API), the
// client and the gateway.
var core = []string{"placement", "routing", "topology", "hotkey", "dataplane", "client", "gateway"}

// allowed are packages under core that may import Kubernetes.
var allowed = map[string]bool{module + "/dataplane/kubemap": true}

// testOnly are the folders whose packages serve tests alone: the helpers
// under internal/testing and the test suites' own packages under test/.
var testOnly = []string{module + "/internal/testing/", module + "/test/"}

// binary is the one binary: every component and standalone mode.
const binary = module + "/cmd/distcache"

// forbidden says why a dependency may not be one of a core package.
func forbidden(dep string) string {
	switch {
	case strings.HasPrefix(dep, module+"/operator"):
		return "the operator"
	case strings.HasPrefix(dep, module+"/standalone"):
		return "standalone mode"
	case strings.HasPrefix(dep, "k8s.io/"), strings.HasPrefix(dep, "sigs.k8s.io/"):
		return "a Kubernetes module"
	}
	return ""
}

func TestCoreImportsNoRuntime(t *testing.T) {
	patterns := make([]string, len(core))
	for i, d := range core {
		patterns[i] = module + "/" + d + "/..."
	}
	pkgs := goList(t, patterns...)
	if len(pkgs) < len(core) {
		t.Fatalf("go list found %d packages under %v", len(pkgs), core)
	}
	for _, pkg := range pkgs {
		if allowed[pkg] {
			continue
		}
		for _, dep := range goList(t, "-deps", pkg) {
			if why := forbidden(dep); why != "" {
				t.Errorf("%s depends on %s (%s)", pkg, dep, why)
			}
		}
	}
}

// TestBinaryLinksNoTestHelper checks that the distcache binary links no
// package that exists only for tests.
func TestBinaryLinksNoTestHelper(t *testing.T) {
	for _, dep := range goList(t, "-deps", binary) {
		for _, prefix := range testOnly {
			if strings.HasPrefix(dep, prefix) {
				t.Errorf("distcache links %s, a package for tests only (under %s)", dep, strings.TrimPrefix(prefix, module+"/"))
			}
		}
	}
}

// TestInternalPackagesAreLinked checks the other side of the split: a
// package under internal/ but outside internal/testing is product code,
// so the distcache binary links it. A helper only tests use belongs under
// internal/testing.
func TestInternalPackagesAreLinked(t *testing.T) {
	deps := goList(t, "-deps", binary)
	for _, pkg := range goList(t, module+"/internal/...") {
		if strings.HasPrefix(pkg, module+"/internal/testing/") {
			continue
		}
		if !slices.Contains(deps, pkg) {
			t.Errorf("%s is not linked by distcache: move it under internal/testing if only tests use it", pkg)
		}
	}
}

// goList runs `go list` with args and returns the import paths it prints.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", append([]string{"list"}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		var msg []byte
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			msg = ee.Stderr
		}
		t.Fatalf("cannot run go list %s: %v\n%s", strings.Join(args, " "), err, msg)
	}
	return strings.Fields(string(out))
}
