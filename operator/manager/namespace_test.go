package manager_test

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/operator/manager"
)

// TestNamespaceLimitsTheOperator runs the operator with --namespace (the
// chart's watchNamespace, whose RBAC is a Role in that namespace only): a
// CacheCluster in another namespace is never reconciled. That one is created
// first; the controller's one worker takes clusters in the order its watch
// delivers them, so had the operator seen it, it would have reconciled it
// before the one in its namespace.
func TestNamespaceLimitsTheOperator(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c := env.Client
	var nss [2]*corev1.Namespace
	for i := range nss {
		nss[i] = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "op-ns-"}}
		if err := c.Create(ctx, nss[i]); err != nil {
			t.Fatal(err)
		}
	}
	watched, other := nss[0].Name, nss[1].Name
	done := make(chan error, 1)
	go func() {
		done <- manager.Run(ctx, env.Config, manager.Options{
			MetricsAddr: "0", ProbeAddr: "0", Namespace: watched, SkipNameValidation: true,
		}, logr.Discard())
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("operator: %v", err)
		}
	})

	outside := &v1alpha1.CacheCluster{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: other},
		Spec: v1alpha1.CacheClusterSpec{LayerRefs: []string{"spine"}}}
	inside := &v1alpha1.CacheCluster{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: watched},
		Spec: v1alpha1.CacheClusterSpec{LayerRefs: []string{"spine"}}}
	for _, cc := range []*v1alpha1.CacheCluster{outside, inside} {
		if err := c.Create(ctx, cc); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the cluster in the watched namespace reconciled", func() bool {
		_ = c.Get(ctx, client.ObjectKeyFromObject(inside), inside)
		return condition(inside.Status.Conditions, v1alpha1.ConditionReady) != nil
	})
	if err := c.Get(ctx, client.ObjectKeyFromObject(outside), outside); err != nil {
		t.Fatal(err)
	}
	if len(outside.Status.Conditions) != 0 || len(outside.Finalizers) != 0 {
		t.Errorf("the cluster outside the watched namespace was reconciled: finalizers %v, conditions %v",
			outside.Finalizers, outside.Status.Conditions)
	}
}
