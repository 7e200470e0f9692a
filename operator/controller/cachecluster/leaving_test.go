package cachecluster_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/placement/partmap"
)

// TestLeavingMemberFencedAtOnce deletes a Ready member's pod (a drain's
// eviction; a finalizer keeps the pod terminating, as a kubelet does while
// the node drains) and checks that the member is fenced in the next map
// without waiting for the grace period, and Active again once its new pod
// is Ready.
func TestLeavingMemberFencedAtOnce(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	startOperator(t, clk)
	cc := newCluster(t, "drain", withStorage(v1alpha1.StorageManaged, 1, 1), withLayer("spine", 2, false), withLayer("leaf", 0, true))
	var m *partmap.Map
	eventually(t, "partition map published", func() (bool, error) {
		var err error
		m, err = publishedMap(t, cc)
		return err == nil, err
	})
	now := clk.Now()
	for _, l := range m.Layers {
		for _, mb := range l.Members {
			setPodReady(t, cc, mb.Name, true, now.Add(-time.Hour))
		}
	}
	ctx := context.Background()
	victim := "drain-spine-1"
	pod := podNamed(t, cc, victim)
	pod.Finalizers = append(pod.Finalizers, "test.distcache.io/terminating")
	if err := env.Client.Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, pod); err != nil {
		t.Fatal(err)
	}
	eventually(t, "leaving member fenced", func() (bool, error) {
		got, err := publishedMap(t, cc)
		return err == nil && memberState(got, victim) == partmap.Fenced, err
	})
	if clk.Now() != now {
		t.Fatal("the clock moved: the member must be fenced without a grace period passing")
	}

	// The pod goes (the node drained it); the StatefulSet's new one is Ready.
	pod = podNamed(t, cc, victim)
	pod.Finalizers = nil
	if err := env.Client.Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	eventually(t, "old pod gone", func() (bool, error) {
		err := get(t, &corev1.Pod{}, cc.Namespace, victim)
		return err != nil, nil
	})
	setPodReady(t, cc, victim, true, now)
	eventually(t, "member Active again", func() (bool, error) {
		got, err := publishedMap(t, cc)
		return err == nil && memberState(got, victim) == partmap.Active, err
	})
}
