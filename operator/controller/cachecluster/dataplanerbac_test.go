package cachecluster_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/dataplane/kubemap"
	"github.com/distcache/distcache/dataplane/mapwatch"
	"github.com/distcache/distcache/operator/controller/cachecluster"
)

// TestDataPlaneReadsMapThroughAPI checks that the data-plane pods run as
// the cluster's own ServiceAccount, read the map ConfigMap through the API
// (no volume), and that the Role the operator grants lets that
// ServiceAccount get and watch the map and nothing else.
func TestDataPlaneReadsMapThroughAPI(t *testing.T) {
	startOperator(t, &clock{t: time.Now()})
	cc := newCluster(t, "api", withStorage(v1alpha1.StorageManaged, 1, 1), withLayer("spine", 2, false))
	ctx := context.Background()
	name := cachecluster.DataPlaneName(cc.Name)
	eventually(t, "partition map published", func() (bool, error) {
		_, err := publishedMap(t, cc)
		return err == nil, err
	})

	for _, set := range []string{"api-spine", "api-rack-0"} {
		sts := &appsv1.StatefulSet{}
		if err := get(t, sts, cc.Namespace, set); err != nil {
			t.Fatal(err)
		}
		pod := sts.Spec.Template.Spec
		if pod.ServiceAccountName != name {
			t.Errorf("StatefulSet %s: serviceAccountName %q, want %q", set, pod.ServiceAccountName, name)
		}
		for _, v := range pod.Volumes {
			if v.ConfigMap != nil {
				t.Errorf("StatefulSet %s mounts ConfigMap %s", set, v.ConfigMap.Name)
			}
		}
		want := "--map-configmap=" + cc.Namespace + "/" + cachecluster.MapConfigMapName(cc.Name)
		c := pod.Containers[len(pod.Containers)-1] // the node, or the shim after redis
		if !slices.Contains(c.Args, want) || slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--map=") }) {
			t.Errorf("StatefulSet %s: args %q, want %s and no --map", set, c.Args, want)
		}
	}
	for _, obj := range []client.Object{&corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}} {
		if err := get(t, obj, cc.Namespace, name); err != nil {
			t.Fatalf("%T %s: %v", obj, name, err)
		}
		if ref := metav1.GetControllerOf(obj); ref == nil || ref.Name != cc.Name {
			t.Errorf("%T %s controller %+v, want the CacheCluster", obj, name, ref)
		}
	}

	// As the ServiceAccount: the map is readable and watchable through
	// kubemap, listing and writing ConfigMaps is refused.
	cfg, err := env.ServiceAccountToken(ctx, cc.Namespace, name)
	if err != nil {
		t.Fatal(err)
	}
	src, err := kubemap.New(cfg, cc.Namespace, cachecluster.MapConfigMapName(cc.Name))
	if err != nil {
		t.Fatal(err)
	}
	w, err := mapwatch.Open(ctx, src, nil)
	if err != nil {
		t.Fatalf("reading the map as %s: %v", name, err)
	}
	if w.Current().Version() < 1 {
		t.Fatalf("map version %d", w.Current().Version())
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cms := cs.CoreV1().ConfigMaps(cc.Namespace)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wt, err := cms.Watch(wctx, metav1.ListOptions{FieldSelector: "metadata.name=" + cachecluster.MapConfigMapName(cc.Name)})
	if err != nil {
		t.Fatalf("watching the map as %s: %v", name, err)
	}
	wt.Stop()
	if _, err := cms.List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("list as %s: %v, want Forbidden", name, err)
	}
	cm, err := cms.Get(ctx, cachecluster.MapConfigMapName(cc.Name), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("update as %s: %v, want Forbidden", name, err)
	}
}
