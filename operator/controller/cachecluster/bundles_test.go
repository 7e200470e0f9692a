package cachecluster_test

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/operator/controller/cachecluster"
)

// withBundles sets spec.dataPlane.bundles.
func withBundles(on bool) clusterOption {
	return func(cc *v1alpha1.CacheCluster) { cc.Spec.DataPlane = &v1alpha1.DataPlaneSpec{Bundles: on} }
}

// TestDataPlaneBundles checks that spec.dataPlane.bundles reaches every
// cache node, shim and gateway as --bundle, and that without it none
// sends bundles.
func TestDataPlaneBundles(t *testing.T) {
	startOperator(t, &clock{t: time.Now()})
	for _, tc := range []struct {
		name string
		opts []clusterOption
		want bool
	}{
		{"bundles", []clusterOption{withBundles(true)}, true},
		{"unset", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := append([]clusterOption{withStorage(v1alpha1.StorageManaged, 1, 1), withLayer("spine", 1, false)}, tc.opts...)
			cc := newCluster(t, "bundles-"+tc.name, opts...)
			objs := map[string]client.Object{
				cc.Name + "-spine":                &appsv1.StatefulSet{},
				cc.Name + "-rack-0":               &appsv1.StatefulSet{},
				cachecluster.GatewayName(cc.Name): &appsv1.Deployment{},
			}
			eventually(t, "node, shim and gateway workloads created", func() (bool, error) {
				for name, o := range objs {
					if err := get(t, o, cc.Namespace, name); err != nil {
						return false, client.IgnoreNotFound(err)
					}
				}
				return true, nil
			})
			for name, o := range objs {
				var pod corev1.PodSpec
				switch w := o.(type) {
				case *appsv1.StatefulSet:
					pod = w.Spec.Template.Spec
				case *appsv1.Deployment:
					pod = w.Spec.Template.Spec
				}
				for _, c := range pod.Containers {
					if c.Name == "redis" {
						continue
					}
					if got := slices.Contains(c.Args, "--bundle"); got != tc.want {
						t.Errorf("%s/%s: --bundle in args %v: %v, want %v", name, c.Name, c.Args, got, tc.want)
					}
				}
			}
		})
	}
}
