package cachecluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/operator/controller/cachecluster"
	"github.com/distcache/distcache/placement/partmap"
)

// BenchmarkReconcile measures one reconcile of a CacheCluster with 1,000
// cache members (and, as the baseline of the same run, 10) against the real API server, calling Reconcile
// directly with an uncached client (every read goes to the API server, an
// upper bound for the operator, whose reads come from its informer cache).
// "steady": nothing to change; "remap": each reconcile fails or restores
// one member and publishes a new map version.
func BenchmarkReconcile(b *testing.B) {
	for _, members := range []int{10, 1000} {
		b.Run(fmt.Sprintf("members=%d", members), func(b *testing.B) { benchmarkReconcile(b, members) })
	}
}

func benchmarkReconcile(b *testing.B, members int) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		b.Fatal(err)
	}
	cc := &v1alpha1.CacheCluster{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: ns.Name}, Spec: v1alpha1.CacheClusterSpec{
		Layers: []v1alpha1.NamedLayer{{Name: "spine", CacheLayerSpec: v1alpha1.CacheLayerSpec{Nodes: ptr.To(int32(members))}}},
	}}
	if err := env.Client.Create(ctx, cc); err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	clk := &clock{t: now}
	r := &cachecluster.Reconciler{Client: env.Client, Scheme: env.Scheme, Now: clk.Now}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(cc)}
	start := time.Now()
	if _, err := r.Reconcile(ctx, req); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d members: first reconcile (creates every object, publishes map v1) took %v", members, time.Since(start))
	pods := make([]*corev1.Pod, members)
	for i := range members {
		pods[i] = &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: partmap.MemberName("big", "spine", i), Namespace: ns.Name,
				Labels: map[string]string{cachecluster.LabelCluster: "big"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "node", Image: "distcache"}}},
		}
		if err := env.Client.Create(ctx, pods[i]); err != nil {
			b.Fatal(err)
		}
		setReady(b, pods[i], true, now.Add(-time.Hour))
	}
	if _, err := r.Reconcile(ctx, req); err != nil {
		b.Fatal(err)
	}
	b.Run("steady", func(b *testing.B) {
		for b.Loop() {
			if _, err := r.Reconcile(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("remap", func(b *testing.B) {
		ready := false
		for b.Loop() {
			b.StopTimer()
			setReady(b, pods[7], ready, now.Add(-time.Hour))
			ready = !ready
			b.StartTimer()
			if _, err := r.Reconcile(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func setReady(b *testing.B, pod *corev1.Pod, ready bool, since time.Time) {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st, LastTransitionTime: metav1.NewTime(since)}}
	if err := env.Client.Status().Update(context.Background(), pod); err != nil {
		b.Fatal(err)
	}
}
