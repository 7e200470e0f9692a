// Package fuzztargets checks that the Makefile's FUZZ_TARGETS, which
// `make fuzz` and `make fuzz-ci` (part of `make test`) run, name every
// fuzz target of the module and nothing else: a new decoder's fuzz target
// cannot be left out of CI.
package fuzztargets

import (
	"bufio"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const root = "../.."

var fuzzFunc = regexp.MustCompile(`^func (Fuzz\w*)\(\w+ \*testing\.F\)`)

// declared lists the module's fuzz targets as Target:./package/.
func declared(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || exists(filepath.Join(path, "go.mod"))) {
				return filepath.SkipDir // another module, or not Go's
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if m := fuzzFunc.FindStringSubmatch(sc.Text()); m != nil {
				rel, err := filepath.Rel(root, filepath.Dir(path))
				if err != nil {
					return err
				}
				out = append(out, m[1]+":./"+filepath.ToSlash(rel)+"/")
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// listed is FUZZ_TARGETS as make expands it.
func listed(t *testing.T) []string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "make", "--no-print-directory", "-s", "print-fuzz-targets")
	cmd.Dir = root
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "FUZZ_TARGETS=") || strings.HasPrefix(kv, "MAKEFLAGS=")
	})
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make print-fuzz-targets: %v", err)
	}
	return strings.Fields(string(out))
}

func TestEveryFuzzTargetIsListed(t *testing.T) {
	decl, list := declared(t), listed(t)
	if len(decl) == 0 {
		t.Fatal("no fuzz target found in the module")
	}
	for _, d := range decl {
		if !slices.Contains(list, d) {
			t.Errorf("%s is not in the Makefile's FUZZ_TARGETS: add it there so that make test fuzzes it", d)
		}
	}
	for i, l := range list {
		if !slices.Contains(decl, l) {
			t.Errorf("FUZZ_TARGETS lists %s, which no _test.go declares", l)
		}
		if slices.Contains(list[:i], l) {
			t.Errorf("FUZZ_TARGETS lists %s twice", l)
		}
	}
}
