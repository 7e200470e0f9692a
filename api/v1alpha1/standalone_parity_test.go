package v1alpha1_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/internal/testing/kubetest"
	"github.com/distcache/distcache/standalone/manifest"
)

// The tests of this file hold standalone mode (package manifest) to the
// real API server: the same object must be accepted or refused by both,
// refused with the same message, and defaulted alike.

// newManifestValidator is standalone mode's validator.
func newManifestValidator(t *testing.T) *manifest.Validator {
	t.Helper()
	v, err := manifest.NewValidator()
	if err != nil {
		t.Fatalf("manifest.NewValidator: %v", err)
	}
	return v
}

// asUnstructured is obj as the unstructured object a client sends.
func asUnstructured(t *testing.T, obj client.Object) *unstructured.Unstructured {
	t.Helper()
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.DeepCopy()
	}
	gvk, err := apiutil.GVKForObject(obj, env.Scheme)
	if err != nil {
		t.Fatalf("cannot find the kind of %T: %v", obj, err)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatalf("cannot convert %T: %v", obj, err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	return u
}

// admitBoth admits a copy of u with v and creates another copy on the API
// server with kubectl's default field validation, Strict, which Admit
// always applies; it returns both resulting objects and both errors.
func admitBoth(t *testing.T, v *manifest.Validator, u *unstructured.Unstructured) (local, remote *unstructured.Unstructured, localErr, remoteErr error) {
	t.Helper()
	local, remote = u.DeepCopy(), u.DeepCopy()
	localErr = v.Admit(t.Context(), local)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	remoteErr = env.Client.Create(ctx, remote, client.FieldValidation("Strict"))
	return local, remote, localErr, remoteErr
}

// assertSameRefusal fails unless both errors are set, of the same reason,
// with byte-identical messages.
func assertSameRefusal(t *testing.T, localErr, remoteErr error) {
	t.Helper()
	if remoteErr == nil || localErr == nil {
		t.Fatalf("want both to refuse: API server: %v; standalone: %v", remoteErr, localErr)
	}
	if got, want := localErr.Error(), remoteErr.Error(); got != want {
		t.Fatalf("messages differ:\nstandalone: %s\nAPI server: %s", got, want)
	}
	if got, want := apierrors.ReasonForError(localErr), apierrors.ReasonForError(remoteErr); got != want {
		t.Fatalf("reasons differ: standalone %q, API server %q", got, want)
	}
}

func TestStandaloneRefusesLikeAPIServer(t *testing.T) {
	v := newManifestValidator(t)
	type refusal struct {
		name string
		obj  client.Object
	}
	var cases []refusal
	for _, c := range celRuleCases() {
		cases = append(cases, refusal{"CEL rule: " + c.name, c.obj})
	}
	for _, c := range schemaCases(t) {
		cases = append(cases, refusal{"schema: " + c.name, c.obj})
	}
	badLabel := newCluster()
	badLabel.Labels = map[string]string{"tier": "-cache-"}
	cases = append(cases,
		refusal{"metadata: name that is no DNS subdomain", newCluster(withName("Shop_1"))},
		refusal{"metadata: no name", newCluster(withName(""))},
		refusal{"metadata: bad label value", badLabel},
		refusal{"type: racks as a string", withRawField(t, newCluster(), "two", "spec", "storage", "racks")},
		refusal{"type: layers as an object", withRawField(t, newCluster(), map[string]any{"name": "spine"}, "spec", "layers")},
		refusal{"type: labels as a string", withRawField(t, newCluster(), "tier", "metadata", "labels")},
		refusal{"type: null layer", withRawField(t, newCluster(), []any{nil}, "spec", "layers")},
	)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, localErr, remoteErr := admitBoth(t, v, asUnstructured(t, tc.obj))
			assertSameRefusal(t, localErr, remoteErr)
		})
	}
}

// TestStandaloneUnknownFieldsLikeAPIServer sends unknown fields: an error
// under kubectl's default field validation, Strict.
func TestStandaloneUnknownFieldsLikeAPIServer(t *testing.T) {
	v := newManifestValidator(t)
	cases := []struct {
		name  string
		value any
		path  []string
	}{
		{"in spec", "x", []string{"spec", "colour"}},
		{"in a section", int64(3), []string{"spec", "storage", "replicas"}},
		{"in metadata", "x", []string{"metadata", "owner"}},
		{"at the root", "x", []string{"extra"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := asUnstructured(t, newCluster())
			if err := unstructured.SetNestedField(u.Object, tc.value, tc.path...); err != nil {
				t.Fatal(err)
			}
			_, _, localErr, remoteErr := admitBoth(t, v, u)
			assertSameRefusal(t, localErr, remoteErr)
		})
	}
	t.Run("several, with an invalid spec", func(t *testing.T) {
		u := asUnstructured(t, newCluster(withStorage(func(s *v1alpha1.StorageSpec) { s.Racks = 5000 })))
		for _, p := range [][]string{{"spec", "b"}, {"spec", "a"}, {"metadata", "z"}} {
			if err := unstructured.SetNestedField(u.Object, "x", p...); err != nil {
				t.Fatal(err)
			}
		}
		layers, _, _ := unstructured.NestedSlice(u.Object, "spec", "layers")
		layers[0].(map[string]any)["size"] = int64(1)
		if err := unstructured.SetNestedSlice(u.Object, layers, "spec", "layers"); err != nil {
			t.Fatal(err)
		}
		_, _, localErr, remoteErr := admitBoth(t, v, u)
		assertSameRefusal(t, localErr, remoteErr)
	})
}

func TestStandaloneAcceptsLikeAPIServer(t *testing.T) {
	v := newManifestValidator(t)
	for _, tc := range validCases() {
		t.Run(tc.name, func(t *testing.T) {
			local, remote, localErr, remoteErr := admitBoth(t, v, asUnstructured(t, tc.obj))
			if localErr != nil || remoteErr != nil {
				t.Fatalf("want both to accept: API server: %v; standalone: %v", remoteErr, localErr)
			}
			if !apiequality.Semantic.DeepEqual(local.Object["spec"], remote.Object["spec"]) {
				t.Fatalf("specs differ:\nstandalone: %v\nAPI server: %v", local.Object["spec"], remote.Object["spec"])
			}
		})
	}
}

// TestStandaloneDefaultsLikeAPIServer creates objects written as a user
// writes YAML, with sections left out, reads them back from the API server
// and compares their specs with what standalone mode makes of them.
func TestStandaloneDefaultsLikeAPIServer(t *testing.T) {
	v := newManifestValidator(t)
	cases := []struct {
		name, prefix, yaml string
	}{
		{"CacheCluster with inline layers only", "cc", `
apiVersion: distcache.io/v1alpha1
kind: CacheCluster
spec:
  layers:
    - {name: spine, nodes: 2}
    - {name: leaf, boundToRacks: true, capacity: {}}
`},
		{"CacheCluster with some sections", "cc", `
apiVersion: distcache.io/v1alpha1
kind: CacheCluster
spec:
  storage: {racks: 3}
  layerRefs: [spine]
  failover: {gracePeriod: 10s}
  images: {redis: "redis:8"}
  hotKeys: {}
`},
		{"CacheCluster with null sections", "cc", `
apiVersion: distcache.io/v1alpha1
kind: CacheCluster
spec:
  storage: null
  routing: ~
  layers: [{name: spine, nodes: 1, capacity: null}]
`},
		{"CacheLayer with nodes only", "cl", `
apiVersion: distcache.io/v1alpha1
kind: CacheLayer
spec: {nodes: 4}
`},
		{"CacheLayer with an empty capacity", "cl", `
apiVersion: distcache.io/v1alpha1
kind: CacheLayer
spec: {boundToRacks: true, capacity: {}}
`},
		{"SwitchFabric", "sf", `
apiVersion: distcache.io/v1alpha1
kind: SwitchFabric
spec:
  driver: stratum
  pipeline: distcache-v1model
  switches: [{name: s1, deviceID: 1, role: spine, p4runtimeAddress: "192.0.2.1:9559"}]
`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(tc.yaml), &u.Object); err != nil {
				t.Fatal(err)
			}
			u.SetName(uniqueName(tc.prefix))
			u.SetNamespace(testNamespace)
			local, remote, localErr, remoteErr := admitBoth(t, v, u)
			if localErr != nil || remoteErr != nil {
				t.Fatalf("want both to accept: API server: %v; standalone: %v", remoteErr, localErr)
			}
			stored := &unstructured.Unstructured{}
			stored.SetGroupVersionKind(remote.GroupVersionKind())
			if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(remote), stored); err != nil {
				t.Fatalf("Get: %v", err)
			}
			if !apiequality.Semantic.DeepEqual(local.Object["spec"], stored.Object["spec"]) {
				t.Fatalf("specs differ:\nstandalone: %v\nAPI server: %v", local.Object["spec"], stored.Object["spec"])
			}
		})
	}
}

// sampleFiles are the repository's cluster files, relative to its root:
// the sample manifests (config/samples, one per storage mode), the demo
// cluster, the demo cluster of storage-leaf switches (with its
// SwitchFabric) and the sample files of package manifest.
func sampleFiles(t *testing.T) []string {
	t.Helper()
	root := kubetest.RepoRoot()
	samples, err := filepath.Glob(filepath.Join(root, "config", "samples", "distcache_*.yaml"))
	if err != nil || len(samples) == 0 {
		t.Fatalf("no sample manifests in config/samples (%v)", err)
	}
	files := []string{"hack/demo/cluster.yaml", "hack/demo/switch-leaf-cluster.yaml", "standalone/manifest/testdata/cluster.yaml", "standalone/manifest/testdata/invalid.yaml"}
	for _, s := range samples {
		rel, err := filepath.Rel(root, s)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, rel)
	}
	return files
}

// TestStandaloneSamplesLikeAPIServer admits every document of the sample
// files both ways, and checks that manifest.Load reports the API server's
// message for the first one it refuses.
func TestStandaloneSamplesLikeAPIServer(t *testing.T) {
	v := newManifestValidator(t)
	for _, name := range sampleFiles(t) {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(kubetest.RepoRoot(), name)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var firstRefusal error
			r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
			for i := 1; ; i++ {
				doc, err := r.Read()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				u := &unstructured.Unstructured{}
				if err := yaml.Unmarshal(doc, &u.Object); err != nil {
					t.Fatalf("document %d: %v", i, err)
				}
				if len(u.Object) == 0 {
					continue
				}
				if u.GetNamespace() == "" {
					u.SetNamespace(testNamespace) // as kubectl does
				}
				local, remote, localErr, remoteErr := admitBoth(t, v, u)
				if remoteErr == nil {
					t.Cleanup(func() { _ = env.Client.Delete(context.Background(), remote) })
				} else if firstRefusal == nil {
					firstRefusal = remoteErr
				}
				if remoteErr != nil || localErr != nil {
					assertSameRefusal(t, localErr, remoteErr)
					continue
				}
				if !apiequality.Semantic.DeepEqual(local.Object["spec"], remote.Object["spec"]) {
					t.Fatalf("document %d: specs differ:\nstandalone: %v\nAPI server: %v", i, local.Object["spec"], remote.Object["spec"])
				}
			}
			_, err = manifest.Load(t.Context(), v, path)
			switch {
			case firstRefusal == nil && err != nil:
				t.Errorf("manifest.Load: %v", err)
			case firstRefusal != nil && (err == nil || !strings.HasSuffix(err.Error(), ": "+firstRefusal.Error())):
				t.Errorf("manifest.Load: got %v, want the API server's %q", err, firstRefusal)
			}
		})
	}
}

// TestSamplesTurnOnAppendOnly checks that every sample cluster whose Redis
// servers DistCache runs (mode managed) says explicitly that they log
// writes to an append-only file.
func TestSamplesTurnOnAppendOnly(t *testing.T) {
	v := newManifestValidator(t)
	for _, name := range sampleFiles(t) {
		if strings.HasSuffix(name, "invalid.yaml") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			b, err := manifest.Load(t.Context(), v, filepath.Join(kubetest.RepoRoot(), name))
			if err != nil {
				t.Fatal(err)
			}
			s := b.Cluster.Spec.Storage
			if s.Mode != v1alpha1.StorageManaged {
				return
			}
			if s.AppendOnly != v1alpha1.AppendOnlyEverySec && s.AppendOnly != v1alpha1.AppendOnlyAlways {
				t.Errorf("storage.appendOnly %q, want everysec or always written out", s.AppendOnly)
			}
		})
	}
}
