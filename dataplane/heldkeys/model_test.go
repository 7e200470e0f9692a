package heldkeys_test

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

// The models: the package's safety argument (directwrites.pml), and the
// node's pending writes and parked readers against the shim's directory
// of copies (trim_forget.pml) and against taking keys out of the set
// (trim_srem.pml). What pan says of a search:
var (
	panErrors  = regexp.MustCompile(`errors: (\d+)`)
	panStates  = regexp.MustCompile(`(\d+) states, stored`)
	panElapsed = regexp.MustCompile(`elapsed time ([0-9.e+-]+) seconds`)
)

// TestModel checks the models with the SPIN model checker: the protocol
// keeps the property (no read that starts after a write is acknowledged
// returns an older value); without the shim's SADD before its reads, or
// before a write's update, the search finds a violation, which shows that
// the assertion can fail; a shim that has just started (FLUSH) keeps it
// with the two fixes of a FLUSH, and not without them; and the rule of a
// reverted change (0649cb1: forget a node whose INVALIDATE_ACK has no
// FlagHit) breaks it; a write that takes its key out of the set (trim)
// keeps it when its phase 2 carries no value, and not otherwise.
func TestModel(t *testing.T) {
	for _, tool := range []string{"spin", "gcc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not on PATH", tool)
		}
	}
	const direct, forget, trim = "directwrites.pml", "trim_forget.pml", "trim_srem.pml"
	tests := []struct {
		name       string
		model      string
		defines    []string // spin -D macros
		wantErrors bool
	}{
		{name: "protocol", model: direct},
		{name: "no mark before read", model: direct, defines: []string{"-DBUG_NO_MARK"}, wantErrors: true},
		{name: "no mark before a write's update", model: direct, defines: []string{"-DBUG_NO_WRITE_MARK"}, wantErrors: true},
		{name: "the node's alternative fix", model: direct, defines: []string{"-DBUG_NO_WRITE_MARK", "-DFIX_UPDATE_FILLED"}},
		{name: "flush as fixed", model: forget, defines: []string{"-DWITH_FLUSH", "-DWITH_CLEAR", "-DFIX_FLUSH_PENDING", "-DFIX_FLUSH_ENTER"}},
		{name: "flush before the fixes", model: forget, defines: []string{"-DWITH_FLUSH"}, wantErrors: true},
		{name: "forget without FlagHit", model: forget, defines: []string{"-DFORGET"}, wantErrors: true},
		{name: "trim as built", model: trim, defines: []string{"-DTRIM", "-DTRIM_SEPARATE", "-DTRIM_FAIL_UPDATE"}},
		{name: "trim keeping the update", model: trim, defines: []string{"-DTRIM", "-DTRIM_KEEP_UPDATE"}, wantErrors: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			model, err := os.ReadFile(filepath.Join("testdata", tt.model))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, tt.model), model, 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := search(t, dir, tt.model, tt.defines)
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
			case tt.wantErrors && (errs == 0 || !strings.Contains(out, "assertion violated")):
				t.Fatalf("pan found no assertion violation, want one:\n%s", out)
			case !tt.wantErrors && errs != 0:
				trail, err := run(t, dir, "spin", append(tt.defines, "-t", "-p", tt.model)...)
				if err != nil {
					t.Log(err)
				}
				t.Fatalf("pan found %d errors, want 0:\n%s\ncounterexample:\n%s", errs, out, trail)
			}
		})
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
	return run(t, dir, "./pan")
}

// run runs name with args in dir and returns its combined output.
func run(t *testing.T, dir, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(t.Context(), name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
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
