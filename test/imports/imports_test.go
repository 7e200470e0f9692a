// Package imports checks the module's import graph: the core and the data
// plane stand on their own, below both runtimes.
package imports

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"runtime"
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
	pkgs := goList(t, "{{.ImportPath}}", patterns(core)...)
	if len(pkgs) < len(core) {
		t.Fatalf("go list found %d packages under %v", len(pkgs), core)
	}
	for _, pkg := range pkgs {
		if allowed[pkg] {
			continue
		}
		for _, dep := range goList(t, `{{join .Deps "\n"}}`, pkg) {
			if why := forbidden(dep); why != "" {
				t.Errorf("%s depends on %s (%s)", pkg, dep, why)
			}
		}
	}
}

func patterns(dirs []string) []string {
	out := make([]string, len(dirs))
	for i, d := range dirs {
		out[i] = module + "/" + d + "/..."
	}
	return out
}

// goList runs `go list -f format` on args from the module's root and
// returns its lines.
func goList(t *testing.T, format string, args ...string) []string {
	t.Helper()
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), append([]string{"list", "-f", format}, args...)...)
	cmd.Dir = filepath.Join("..", "..")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", args, err, stderr.String())
	}
	return strings.Fields(string(out))
}
