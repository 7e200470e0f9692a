package manifest_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/layout"
	"github.com/distcache/distcache/standalone/manifest"
)

// validator is one Validator for every test of the package: compiling the
// CRDs once is enough.
var validator = func() *manifest.Validator {
	v, err := manifest.NewValidator()
	if err != nil {
		panic(err)
	}
	return v
}()

const (
	clusterDoc = `apiVersion: distcache.io/v1alpha1
kind: CacheCluster
metadata: {name: shop}
spec:
  layerRefs: [spine]
`
	spineDoc = `apiVersion: distcache.io/v1alpha1
kind: CacheLayer
metadata: {name: spine}
spec: {nodes: 3}
`
)

// docs joins YAML documents with "---" lines.
func docs(ds ...string) string { return strings.Join(ds, "---\n") }

func TestParse(t *testing.T) {
	cases := []struct {
		name string
		yaml string
		// check inspects a bundle that loaded; nil means the load must fail.
		check func(t *testing.T, b *manifest.Bundle)
		// wantErr is every substring the error must have, wantIs what it
		// must wrap, wantExact its full text ("" to skip).
		wantErr   []string
		wantIs    error
		wantExact string
	}{
		{name: "cluster and its layer", yaml: docs(clusterDoc, spineDoc), check: func(t *testing.T, b *manifest.Bundle) {
			if b.Cluster.Name != "shop" || len(b.Layers) != 1 || b.Layers["spine"] == nil || *b.Layers["spine"].Spec.Nodes != 3 {
				t.Fatalf("got cluster %q and layers %v", b.Cluster.Name, b.Layers)
			}
		}},
		{name: "empty documents and comments skipped", yaml: "---\n# a comment\n---\n" + docs(clusterDoc, "\n", spineDoc, "# end\n"),
			check: func(t *testing.T, b *manifest.Bundle) {
				if b.Cluster == nil || len(b.Layers) != 1 {
					t.Fatalf("got %+v", b)
				}
			}},
		{name: "a List", yaml: `apiVersion: v1
kind: List
items:
  - {apiVersion: distcache.io/v1alpha1, kind: CacheCluster, metadata: {name: shop}, spec: {layerRefs: [spine]}}
  - {apiVersion: distcache.io/v1alpha1, kind: CacheLayer, metadata: {name: spine}, spec: {nodes: 3}}
  - {apiVersion: distcache.io/v1alpha1, kind: SwitchFabric, metadata: {name: tofino}, spec: {driver: onos, pipeline: distcache-tna,
     onos: {endpoint: "http://onos:8181"}, switches: [{name: s1, deviceID: 1, role: spine}]}}
`, check: func(t *testing.T, b *manifest.Bundle) {
			if b.Cluster.Name != "shop" || b.Layers["spine"] == nil || b.Fabrics["tofino"] == nil {
				t.Fatalf("got %+v", b)
			}
		}},
		{name: "defaults of omitted sections", yaml: `apiVersion: distcache.io/v1alpha1
kind: CacheCluster
metadata: {name: shop}
spec:
  layers: [{name: spine, nodes: 2}]
`, check: func(t *testing.T, b *manifest.Bundle) {
			s := b.Cluster.Spec
			if s.Storage.Mode != v1alpha1.StorageManaged || s.Storage.Racks != 1 || s.Storage.ShardsPerRack != 1 {
				t.Errorf("storage not defaulted: %+v", s.Storage)
			}
			if s.Failover.GracePeriod == nil || s.Failover.GracePeriod.Duration != 30*time.Second || s.HotKeys.Interval == nil || s.HotKeys.Threshold != 0 {
				t.Errorf("failover and hotKeys not defaulted: %+v %+v", s.Failover, s.HotKeys)
			}
			if l := s.Layers[0]; l.Backend != v1alpha1.BackendSoftware || l.VirtualNodes != 2048 {
				t.Errorf("layer not defaulted: %+v", l)
			}
			if b.Cluster.Namespace != "default" || b.Cluster.Generation != 1 {
				t.Errorf("namespace %q, generation %d: want default, 1", b.Cluster.Namespace, b.Cluster.Generation)
			}
		}},
		{name: "status dropped", yaml: clusterDoc + "status: {members: 7}\n---\n" + spineDoc, check: func(t *testing.T, b *manifest.Bundle) {
			if b.Cluster.Status.Members != 0 {
				t.Fatalf("status kept: %+v", b.Cluster.Status)
			}
		}},
		{name: "no CacheCluster", yaml: spineDoc, wantErr: []string{"cannot load a cluster: f.yaml: no CacheCluster declared"}},
		{name: "two CacheClusters", yaml: docs(clusterDoc, spineDoc, strings.Replace(clusterDoc, "shop", "cart", 1)),
			wantExact: `f.yaml: document 3: cannot run two CacheClusters: "cart" here and "shop" in f.yaml: document 1; standalone mode runs exactly one`},
		{name: "unknown kind", yaml: docs(clusterDoc, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"), wantIs: manifest.ErrUnknownKind,
			wantErr: []string{`f.yaml: document 2: cannot admit kind "ConfigMap" of apiVersion "v1"`, "distcache.io/v1alpha1 CacheCluster"}},
		{name: "no kind", yaml: "apiVersion: distcache.io/v1alpha1\nmetadata: {name: x}\n", wantIs: manifest.ErrUnknownKind,
			wantErr: []string{"f.yaml: cannot admit an object without apiVersion and kind"}},
		{name: "YAML syntax error", yaml: docs(clusterDoc, "kind: CacheLayer\nspec:\n  nodes: [3\n"),
			wantErr: []string{"f.yaml: document 2: cannot parse the YAML that starts on line 7: ", "yaml: line 3"}},
		{name: "duplicate key", yaml: "kind: CacheCluster\nkind: CacheLayer\n",
			wantErr: []string{"f.yaml: cannot parse the YAML that starts on line 1: ", `key "kind" already set in map`}},
		{name: "not a mapping", yaml: "- a\n- b\n", wantErr: []string{"f.yaml: cannot read an object: the document is not a YAML mapping"}},
		{name: "layerRef not found", yaml: clusterDoc, wantIs: layout.ErrLayerNotFound,
			wantExact: `f.yaml: cannot resolve layerRef "spine" of CacheCluster "shop": no CacheLayer of that name in f.yaml: cache layer not found`},
		{name: "layer declared twice", yaml: docs(clusterDoc, spineDoc, spineDoc),
			wantExact: `f.yaml: document 3: cannot declare CacheLayer "spine" twice: f.yaml: document 2 declares it too`},
		{name: "layer in another namespace", yaml: docs(clusterDoc, strings.Replace(spineDoc, "{name: spine}", "{name: spine, namespace: other}", 1)),
			wantErr: []string{`f.yaml: document 2: cannot use CacheLayer "spine" of namespace "other" with CacheCluster "shop" of namespace "default"`}},
		{name: "generated name", yaml: docs(strings.Replace(clusterDoc, "{name: shop}", "{generateName: shop-}", 1), spineDoc),
			wantErr: []string{"f.yaml: document 1: cannot run CacheCluster with a generated name"}},
		{name: "invalid spec", yaml: `apiVersion: distcache.io/v1alpha1
kind: CacheCluster
metadata: {name: shop}
spec:
  storage: {mode: external, racks: 2, external: ["redis-a.example:6379"]}
  layers: [{name: spine, nodes: 2}]
`, wantExact: `f.yaml: CacheCluster.distcache.io "shop" is invalid: spec.storage: Invalid value: ` +
			`storage.external must list one Redis endpoint per shard: racks × shardsPerRack of them, rack by rack`},
		{name: "invalid enum blocks the CEL rules", yaml: docs(clusterDoc, strings.Replace(spineDoc, "{nodes: 3}", "{nodes: 3, backend: fpga}", 1)),
			wantExact: `f.yaml: document 2: CacheLayer.distcache.io "spine" is invalid: [spec.backend: Unsupported value: "fpga": supported values: "software", "switch", ` +
				`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]`},
		{name: "unknown field", yaml: docs(clusterDoc+"  colour: blue\n", spineDoc),
			wantExact: `f.yaml: document 1: CacheCluster in version "v1alpha1" cannot be handled as a CacheCluster: strict decoding error: unknown field "spec.colour"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := manifest.Parse(t.Context(), validator, "f.yaml", []byte(tc.yaml))
			if tc.check != nil {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				tc.check(t, b)
				return
			}
			if err == nil {
				t.Fatalf("Parse: got a bundle, want an error")
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Parse: error %q does not say %q", err, w)
				}
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("Parse: error %q does not wrap %v", err, tc.wantIs)
			}
			if tc.wantExact != "" && err.Error() != tc.wantExact {
				t.Errorf("Parse: error\n%s\nwant\n%s", err, tc.wantExact)
			}
		})
	}
}

func TestParseKeepsAPIErrors(t *testing.T) {
	_, err := manifest.Parse(t.Context(), validator, "f.yaml", []byte(docs(clusterDoc+"  colour: blue\n", spineDoc)))
	if !apierrors.IsBadRequest(err) {
		t.Errorf("unknown field: got %v, want a BadRequest", err)
	}
	_, err = manifest.Parse(t.Context(), validator, "f.yaml", []byte(docs(strings.Replace(clusterDoc, "[spine]", "[Spine]", 1), spineDoc)))
	if !apierrors.IsInvalid(err) {
		t.Errorf("invalid layerRef: got %v, want an Invalid error", err)
	}
}

func TestLoad(t *testing.T) {
	cases := []struct {
		name    string
		paths   []string
		wantErr string // "" for success
	}{
		{"sample cluster", []string{"testdata/cluster.yaml"}, ""},
		{"invalid sample", []string{"testdata/invalid.yaml"}, `testdata/invalid.yaml: CacheCluster.distcache.io "broken" is invalid: [` +
			`spec.storage.racks: Invalid value: 0: spec.storage.racks in body should be greater than or equal to 1, ` +
			`spec.layers[0]: Invalid value: nodes is required unless the layer is bound to storage racks (boundToRacks: true)]`},
		{"no file", nil, "cannot load a cluster: no file given"},
		{"missing file", []string{filepath.Join("testdata", "missing.yaml")}, "cannot read cluster file: open testdata/missing.yaml: no such file or directory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := manifest.Load(t.Context(), validator, tc.paths...)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("Load: got %v, want %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if b.Cluster.Name != "shop" || b.Layers["spine"] == nil || b.Layers["leaf"] == nil {
				t.Fatalf("got %+v", b)
			}
		})
	}
}

// TestLoadAcrossFiles declares the cluster and its layer in two files.
func TestLoadAcrossFiles(t *testing.T) {
	dir := t.TempDir()
	files := []struct{ name, content string }{{"cluster.yaml", clusterDoc}, {"layers.yaml", spineDoc}}
	var paths []string
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, []byte(f.content), 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	b, err := manifest.Load(t.Context(), validator, paths...)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if b.Layers["spine"] == nil {
		t.Fatalf("layer of the second file missing: %+v", b)
	}
	_, err = manifest.Load(t.Context(), validator, paths[0])
	if !errors.Is(err, layout.ErrLayerNotFound) {
		t.Fatalf("Load of the cluster file alone: got %v, want ErrLayerNotFound", err)
	}
}
