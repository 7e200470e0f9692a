package main

import (
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is the import path of this repository's module.
const module = "github.com/distcache/distcache"

// testOnly are the folders whose packages serve tests alone: the helpers
// under internal/testing and the test suites' own packages under test/.
var testOnly = []string{module + "/internal/testing/", module + "/test/"}

// goList runs `go list` with args in this package's directory and
// returns the import paths it prints.
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

// TestBinaryLinksNoTestHelper checks that the distcache binary, which
// runs every component and standalone mode, links no package that exists
// only for tests.
func TestBinaryLinksNoTestHelper(t *testing.T) {
	for _, dep := range goList(t, "-deps", ".") {
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
	deps := goList(t, "-deps", ".")
	for _, pkg := range goList(t, module+"/internal/...") {
		if strings.HasPrefix(pkg, module+"/internal/testing/") {
			continue
		}
		if !slices.Contains(deps, pkg) {
			t.Errorf("%s is not linked by distcache: move it under internal/testing if only tests use it", pkg)
		}
	}
}
