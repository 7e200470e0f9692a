package kubetest_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/internal/testing/kubetest"
	"github.com/distcache/distcache/operator/controller/cachecluster"
)

// TestControlPlane starts the real API server with the CRDs installed and
// checks that it serves and defaults a CacheCluster and accepts a Redis of
// the redis-operator stand-in CRD.
func TestControlPlane(t *testing.T) {
	env, err := kubetest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()
	cc := &v1alpha1.CacheCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "default"},
		Spec: v1alpha1.CacheClusterSpec{
			Layers: []v1alpha1.NamedLayer{{Name: "spine", CacheLayerSpec: v1alpha1.CacheLayerSpec{Nodes: ptr.To[int32](2)}}},
		},
	}
	if err := env.Client.Create(ctx, cc); err != nil {
		t.Fatal(err)
	}
	if cc.Spec.Storage.Mode != v1alpha1.StorageManaged || cc.Spec.Storage.Racks != 1 || cc.Spec.Layers[0].VirtualNodes != 2048 {
		t.Fatalf("defaults not applied: %+v", cc.Spec)
	}
	r := &unstructured.Unstructured{}
	r.SetGroupVersionKind(cachecluster.RedisGVK)
	r.SetName("demo-rack-0-0")
	r.SetNamespace("default")
	if err := unstructured.SetNestedField(r.Object, "redis:7.4", "spec", "kubernetesConfig", "image"); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
}
