package cachecluster_test

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/operator/controller/cachecluster"
)

// withDataPlaneImage sets the operator's data-plane image.
func withDataPlaneImage(image string) func(*cachecluster.Reconciler) {
	return func(r *cachecluster.Reconciler) { r.DataPlaneImage = image }
}

// setImages are the images of every container of a StatefulSet, by
// container name.
func setImages(sts *appsv1.StatefulSet) map[string]string {
	out := map[string]string{}
	for _, c := range sts.Spec.Template.Spec.Containers {
		out[c.Name] = c.Image
	}
	return out
}

// TestDataPlaneImageFollowsTheOperator checks what an operator upgrade does
// to the data plane: a cluster whose spec names no distcache image runs the
// operator's data-plane image, and moves to the new one when an operator
// with another image takes over (the StatefulSets' templates change, which
// rolls their pods); a cluster that names an image keeps it.
func TestDataPlaneImageFollowsTheOperator(t *testing.T) {
	const pinned = "registry.example/distcache:v0.0.9"
	clk := &clock{t: time.Now()}
	op := startOperator(t, clk, withDataPlaneImage("registry.example/distcache:v1"))
	follows := newCluster(t, "follows", withStorage(v1alpha1.StorageManaged, 1, 1), withLayer("spine", 1, false))
	pins := newCluster(t, "pins", withStorage(v1alpha1.StorageManaged, 1, 1), withLayer("spine", 1, false),
		func(cc *v1alpha1.CacheCluster) { cc.Spec.Images.DistCache = pinned })

	// expect waits until the spine and rack sets of cc run image in their
	// distcache containers (Redis keeps its own image).
	expect := func(cc *v1alpha1.CacheCluster, image string) {
		t.Helper()
		for set, container := range map[string]string{cc.Name + "-spine": "node", cc.Name + "-rack-0": "shim"} {
			eventually(t, fmt.Sprintf("%s's %s container on %s", set, container, image), func() (bool, error) {
				sts := &appsv1.StatefulSet{}
				if err := get(t, sts, cc.Namespace, set); err != nil {
					return false, err
				}
				got := setImages(sts)
				return got[container] == image && (container != "shim" || got["redis"] == "redis:7.4"), fmt.Errorf("images %v", got)
			})
		}
	}
	expect(follows, "registry.example/distcache:v1")
	expect(pins, pinned)

	op.Stop()
	startOperator(t, clk, withDataPlaneImage("registry.example/distcache:v2"))
	expect(follows, "registry.example/distcache:v2")
	expect(pins, pinned)
}
