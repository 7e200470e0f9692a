// Package spintest checks Promela models with the SPIN model checker in
// tests: it generates the verifier, compiles it and runs an exhaustive
// search per case, and tells whether the search found a violation.
package spintest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Case is one search of a model.
type Case struct {
	Name string
	// Defines are the model's macros for this search (spin -D…).
	Defines []string
	// WantViolation says the search must find an assertion violation:
	// the case leaves out a rule the property needs.
	WantViolation bool
}

// Option changes how Run searches.
type Option func(*options)

type options struct{ serial bool }

// Serial runs the cases one after another, for models whose searches
// take much memory.
func Serial() Option { return func(o *options) { o.serial = true } }

// What pan says of a search.
var (
	panErrors  = regexp.MustCompile(`errors: (\d+)`)
	panStates  = regexp.MustCompile(`(\d+) states, stored`)
	panElapsed = regexp.MustCompile(`elapsed time ([0-9.e+-]+) seconds`)
)

// Run searches model (a .pml file) once per case, as a subtest each. It
// skips when spin or gcc is not on PATH. A case fails when its search is
// incomplete, when it finds errors it should not, or when it finds no
// assertion violation where it should; a search that should find none
// but does logs SPIN's counterexample.
func Run(t *testing.T, model string, cases []Case, opts ...Option) {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	for _, tool := range []string{"spin", "gcc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not on PATH", tool)
		}
	}
	text, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(model)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			if !o.serial {
				t.Parallel()
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, name), text, 0o644); err != nil {
				t.Fatal(err)
			}
			check(t, dir, name, c)
		})
	}
}

// check runs one search of model in dir and judges it.
func check(t *testing.T, dir, model string, c Case) {
	out, err := search(t, dir, model, c.Defines)
	if err != nil {
		t.Fatal(err)
	}
	m := panErrors.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("pan reported no error count:\n%s", out)
	}
	errs, err := strconv.Atoi(m[1])
	if err != nil {
		t.Fatalf("pan's error count %q: %v", m[1], err)
	}
	t.Logf("pan: errors %d, %s states stored, %s s", errs, submatch(panStates, out), submatch(panElapsed, out))
	if strings.Contains(out, "max search depth too small") {
		t.Fatalf("search incomplete: max search depth too small:\n%s", out)
	}
	switch {
	case c.WantViolation && (errs == 0 || !strings.Contains(out, "assertion violated")):
		t.Fatalf("pan found no assertion violation, want one:\n%s", out)
	case !c.WantViolation && errs != 0:
		trail, err := run(t, dir, "spin", append(c.Defines, "-t", "-p", model)...)
		if err != nil {
			t.Log(err)
		}
		t.Fatalf("pan found %d errors, want 0:\n%s\ncounterexample:\n%s", errs, out, trail)
	}
}

// search generates the verifier of model in dir with defines, compiles
// it (states stored compressed) and runs it, and returns its output.
func search(t *testing.T, dir, model string, defines []string) (string, error) {
	if _, err := run(t, dir, "spin", append(defines, "-a", model)...); err != nil {
		return "", err
	}
	if _, err := run(t, dir, "gcc", "-O2", "-DSAFETY", "-DCOLLAPSE", "-o", "pan", "pan.c"); err != nil {
		return "", err
	}
	return run(t, dir, "./pan", "-m100000")
}

// run runs name with args in dir and returns its combined output.
func run(t *testing.T, dir, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(t.Context(), name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("cannot run %s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// submatch is re's first group in s, or "?".
func submatch(re *regexp.Regexp, s string) string {
	if m := re.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return "?"
}
