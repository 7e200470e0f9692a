package manifest_test

import (
	"errors"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/distcache/distcache/standalone/manifest"
)

// layer is an unstructured CacheLayer named name with spec.
func layer(name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "distcache.io/v1alpha1", "kind": "CacheLayer",
		"metadata": map[string]any{"name": name},
		"spec":     spec,
	}}
}

func TestValidatorKinds(t *testing.T) {
	var got []string
	for _, k := range validator.Kinds() {
		got = append(got, k.String())
	}
	want := []string{
		"distcache.io/v1alpha1, Kind=CacheCluster",
		"distcache.io/v1alpha1, Kind=CacheLayer",
		"distcache.io/v1alpha1, Kind=SwitchFabric",
	}
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Fatalf("Kinds: got %v, want %v", got, want)
	}
}

func TestAdmit(t *testing.T) {
	cases := []struct {
		name string
		obj  *unstructured.Unstructured
		// check inspects an admitted object; nil means Admit must fail
		// with wantErr and leave the object unchanged.
		check   func(t *testing.T, u *unstructured.Unstructured)
		wantErr string
		wantIs  func(error) bool
	}{
		{name: "defaults in place", obj: layer("spine", map[string]any{"nodes": int64(2), "capacity": map[string]any{}}),
			check: func(t *testing.T, u *unstructured.Unstructured) {
				want := map[string]any{
					"backend": "software", "nodes": int64(2), "virtualNodes": int64(2048),
					"capacity": map[string]any{"entries": int64(10000), "bytes": "64Mi"},
				}
				if !apiequality.Semantic.DeepEqual(u.Object["spec"], want) {
					t.Errorf("spec: got %v, want %v", u.Object["spec"], want)
				}
				if u.GetNamespace() != "default" || u.GetGeneration() != 1 || u.GetUID() == "" {
					t.Errorf("metadata: got namespace %q, generation %d, uid %q", u.GetNamespace(), u.GetGeneration(), u.GetUID())
				}
			}},
		{name: "namespace kept, status dropped", obj: func() *unstructured.Unstructured {
			u := layer("spine", map[string]any{"nodes": int64(1)})
			u.SetNamespace("shop")
			u.Object["status"] = map[string]any{"clusters": []any{"x"}}
			return u
		}(), check: func(t *testing.T, u *unstructured.Unstructured) {
			if u.GetNamespace() != "shop" || u.Object["status"] != nil {
				t.Errorf("got namespace %q, status %v", u.GetNamespace(), u.Object["status"])
			}
		}},
		{name: "CEL rule", obj: layer("spine", map[string]any{}),
			wantErr: `CacheLayer.distcache.io "spine" is invalid: spec: Invalid value: nodes is required unless the layer is bound to storage racks (boundToRacks: true)`,
			wantIs:  apierrors.IsInvalid},
		{name: "schema", obj: layer("spine", map[string]any{"nodes": int64(5000)}),
			wantErr: `CacheLayer.distcache.io "spine" is invalid: spec.nodes: Invalid value: 5000: spec.nodes in body should be less than or equal to 4096`,
			wantIs:  apierrors.IsInvalid},
		{name: "unknown field", obj: layer("spine", map[string]any{"nodes": int64(1), "replicas": int64(2)}),
			wantErr: `CacheLayer in version "v1alpha1" cannot be handled as a CacheLayer: strict decoding error: unknown field "spec.replicas"`,
			wantIs:  apierrors.IsBadRequest},
		{name: "unknown kind", obj: &unstructured.Unstructured{Object: map[string]any{"apiVersion": "distcache.io/v1", "kind": "CacheLayer"}},
			wantErr: `cannot admit kind "CacheLayer" of apiVersion "distcache.io/v1": unknown kind; standalone mode reads ` +
				`distcache.io/v1alpha1 CacheCluster, distcache.io/v1alpha1 CacheLayer, distcache.io/v1alpha1 SwitchFabric`,
			wantIs: func(err error) bool { return errors.Is(err, manifest.ErrUnknownKind) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.obj.DeepCopy()
			err := validator.Admit(t.Context(), tc.obj)
			if tc.check != nil {
				if err != nil {
					t.Fatalf("Admit: %v", err)
				}
				tc.check(t, tc.obj)
				return
			}
			if err == nil || err.Error() != tc.wantErr {
				t.Fatalf("Admit: got %v, want %s", err, tc.wantErr)
			}
			if !tc.wantIs(err) {
				t.Errorf("Admit: error %v is not of the expected type", err)
			}
			if !apiequality.Semantic.DeepEqual(before, tc.obj) {
				t.Errorf("Admit changed the object it refused: %v", tc.obj)
			}
		})
	}
}
