// Package scripts checks the repository's shell scripts (hack/, the Kind
// workflow among them) with shellcheck, which `make test` installs.
package scripts

import (
	"io/fs"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distcache/distcache/internal/testing/kubetest"
)

// TestShellcheck runs shellcheck over every *.sh file in the repository.
func TestShellcheck(t *testing.T) {
	bin, err := exec.LookPath("shellcheck")
	if err != nil {
		t.Skip("shellcheck not on PATH (make test installs it)")
	}
	root := kubetest.RepoRoot()
	var scripts []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "out" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".sh") {
			scripts = append(scripts, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(scripts) == 0 {
		t.Fatal("no shell scripts found")
	}
	out, err := exec.CommandContext(t.Context(), bin, append([]string{"--external-sources"}, scripts...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("shellcheck: %v\n%s", err, out)
	}
	t.Logf("shellcheck: %d scripts clean", len(scripts))
}
