package chaos_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/distcache/distcache/internal/testing/kubetest"
)

// env is the package's control plane, with Chaos Mesh's CRDs installed.
var env *kubetest.Env

func TestMain(m *testing.M) { kubetest.Main(m, &env, kubetest.WithChaosMesh()) }

// chaosMeshGroup is the API group of every Chaos Mesh kind.
const chaosMeshGroup = "chaos-mesh.org"

// document is one YAML document of a file in chaos/.
type document struct {
	file  string // base name, in chaos/
	index int    // 1-based position in the file
	obj   *unstructured.Unstructured
}

func (d document) String() string {
	return fmt.Sprintf("chaos/%s document %d (%s %s)", d.file, d.index, d.obj.GetKind(), d.obj.GetName())
}

// chaosDir is the directory of the experiments.
func chaosDir() string { return filepath.Join(kubetest.RepoRoot(), "chaos") }

// manifestFiles are the base names of chaos/*.yaml, sorted.
func manifestFiles(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(chaosDir(), "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("no YAML files in %s", chaosDir())
	}
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = filepath.Base(p)
	}
	return names
}

// readDocuments decodes every document of chaos/<file>; duplicate keys
// are errors.
func readDocuments(t *testing.T, file string) []document {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chaosDir(), file))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := decodeDocuments(file, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatalf("chaos/%s holds no document", file)
	}
	return docs
}

func decodeDocuments(file string, b []byte) ([]document, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var docs []document
	for i := 1; ; i++ {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("cannot split chaos/%s into documents: %w", file, err)
		}
		if len(bytes.TrimSpace(stripComments(raw))) == 0 {
			continue
		}
		j, err := yaml.YAMLToJSONStrict(raw)
		if err != nil {
			return nil, fmt.Errorf("cannot decode chaos/%s document %d: %w", file, i, err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(j); err != nil {
			return nil, fmt.Errorf("cannot decode chaos/%s document %d: %w", file, i, err)
		}
		docs = append(docs, document{file: file, index: i, obj: u})
	}
}

// stripComments drops the comment lines of a YAML document.
func stripComments(b []byte) []byte {
	var out [][]byte
	for line := range bytes.Lines(b) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(out, line)
		}
	}
	return bytes.Join(out, nil)
}

// TestManifestsAreDocumented checks that every experiment file opens with
// what it injects and what DistCache is expected to do, and that
// docs/chaos.md names every file.
func TestManifestsAreDocumented(t *testing.T) {
	guide, err := os.ReadFile(filepath.Join(kubetest.RepoRoot(), "docs", "chaos.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range manifestFiles(t) {
		b, err := os.ReadFile(filepath.Join(chaosDir(), file))
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		if !strings.Contains(string(guide), file) {
			t.Errorf("docs/chaos.md does not mention chaos/%s", file)
		}
		if slices.ContainsFunc(readDocuments(t, file), func(d document) bool { return d.obj.GroupVersionKind().Group == chaosMeshGroup }) &&
			(!strings.HasPrefix(text, "# Injects:") || !strings.Contains(text, "# Expected:")) {
			t.Errorf("chaos/%s must open with a comment saying what it injects (# Injects:) and what DistCache is expected to do (# Expected:)", file)
		}
	}
}
