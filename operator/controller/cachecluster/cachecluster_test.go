package cachecluster_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/layout"
	"github.com/distcache/distcache/operator/controller/cachecluster"
	"github.com/distcache/distcache/placement/partmap"
)

// publishedMap reads the cluster's partition map ConfigMap.
func publishedMap(t *testing.T, cc *v1alpha1.CacheCluster) (*partmap.Map, error) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := get(t, cm, cc.Namespace, cachecluster.MapConfigMapName(cc.Name)); err != nil {
		return nil, err
	}
	return partmap.Decode([]byte(cm.Data[cachecluster.MapKey]))
}

// setPodReady creates or updates a member's pod with its Ready condition
// changed at since.
func setPodReady(t *testing.T, cc *v1alpha1.CacheCluster, name string, ready bool, since time.Time) {
	t.Helper()
	pod := podNamed(t, cc, name)
	setReadyCondition(pod, ready, since)
	if err := env.Client.Status().Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
}

// podNamed is cc's pod name, created (without status) if it does not exist:
// envtest runs no StatefulSet controller.
func podNamed(t *testing.T, cc *v1alpha1.CacheCluster, name string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	if err := get(t, pod, cc.Namespace, name); apierrors.IsNotFound(err) {
		pod = &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cc.Namespace, Labels: map[string]string{cachecluster.LabelCluster: cc.Name}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "node", Image: "distcache"}}},
		}
		if err := env.Client.Create(context.Background(), pod); err != nil {
			t.Fatal(err)
		}
	} else if err != nil {
		t.Fatal(err)
	}
	return pod
}

// setReadyCondition sets pod's Ready condition, true or false since since.
func setReadyCondition(pod *corev1.Pod, ready bool, since time.Time) {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st, LastTransitionTime: metav1.NewTime(since)}}
}

func memberStatus(cc *v1alpha1.CacheCluster, name string) (v1alpha1.MemberStatus, bool) {
	for _, l := range cc.Status.Layers {
		for _, m := range l.Members {
			if m.Name == name {
				return m, true
			}
		}
	}
	return v1alpha1.MemberStatus{}, false
}

func TestCreateFailRestoreDelete(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	op := startOperator(t, clk)
	cc := newCluster(t, "demo", withStorage(v1alpha1.StorageManaged, 2, 2), withLayer("spine", 3, false), withLayer("leaf", 0, true))
	ctx := context.Background()

	// Created: every object, owned by the cluster, and the map the core computes.
	var m *partmap.Map
	eventually(t, "partition map published", func() (bool, error) {
		var err error
		m, err = publishedMap(t, cc)
		return err == nil, err
	})
	stored := &v1alpha1.CacheCluster{}
	if err := get(t, stored, cc.Namespace, cc.Name); err != nil {
		t.Fatal(err)
	}
	topo, err := layout.New(stored.Name, stored.Spec, []layout.Layer{
		{Name: "spine", Spec: stored.Spec.Layers[0].CacheLayerSpec}, {Name: "leaf", Spec: stored.Spec.Layers[1].CacheLayerSpec},
	})
	if err != nil {
		t.Fatal(err)
	}
	// A new cluster requires replay stamps from its first map.
	shape := topo.Shape()
	shape.ReplayProtection = partmap.ReplayRequire
	want, err := shape.Map(nil, nil) // no pod has an IP under envtest: no addresses
	if err != nil {
		t.Fatal(err)
	}
	if a, b := mustEncode(t, m), mustEncode(t, want); !bytes.Equal(a, b) {
		t.Fatalf("published map differs from the core's:\n%s\nwant\n%s", a, b)
	}
	for _, name := range []string{"demo-spine", "demo-leaf", "demo-rack-0", "demo-rack-1"} {
		sts := &appsv1.StatefulSet{}
		if err := get(t, sts, cc.Namespace, name); err != nil {
			t.Fatalf("StatefulSet %s: %v", name, err)
		}
		if ref := metav1.GetControllerOf(sts); ref == nil || ref.Name != cc.Name || ref.Kind != "CacheCluster" {
			t.Fatalf("StatefulSet %s controller %+v, want the CacheCluster", name, ref)
		}
		if err := get(t, &corev1.Service{}, cc.Namespace, name); err != nil {
			t.Fatalf("Service %s: %v", name, err)
		}
	}

	// All members Ready; then one not Ready for less than the grace period: nothing moves.
	now := clk.Now()
	for _, l := range m.Layers {
		for _, mb := range l.Members {
			setPodReady(t, cc, mb.Name, true, now.Add(-time.Hour))
		}
	}
	victim := "demo-spine-1"
	setPodReady(t, cc, victim, false, now.Add(-10*time.Second))
	eventually(t, "status shows the member not Ready", func() (bool, error) {
		err := get(t, stored, cc.Namespace, cc.Name)
		ms, ok := memberStatus(stored, victim)
		return err == nil && ok && !ms.Ready, err
	})
	if got, _ := publishedMap(t, cc); got.Version != 1 {
		t.Fatalf("map version %d within the grace period, want 1", got.Version)
	}

	// Not Ready for the grace period less the fence lead (the serving
	// lease plus the delivery lag of a map read through the API, none):
	// fenced, its keys unmoved, event.
	setPodReady(t, cc, victim, false, now.Add(-29*time.Second)) // condition times are in whole seconds
	var fenced *partmap.Map
	eventually(t, "member fenced", func() (bool, error) {
		var err error
		fenced, err = publishedMap(t, cc)
		return err == nil && memberState(fenced, victim) == partmap.Fenced, err
	})
	if fenced.Version != 2 {
		t.Fatalf("map version %d after fencing, want 2", fenced.Version)
	}
	assertSamePlacement(t, m, fenced)
	eventually(t, "MemberFenced event", func() (bool, error) { return hasEvent(t, cc, "MemberFenced", victim) })

	// Not Ready past the grace period: failed, map bumped, only its share moved, event.
	setPodReady(t, cc, victim, false, now.Add(-31*time.Second))
	var failed *partmap.Map
	eventually(t, "member marked failed", func() (bool, error) {
		var err error
		failed, err = publishedMap(t, cc)
		return err == nil && memberState(failed, victim) == partmap.Failed, err
	})
	if failed.Version != 3 {
		t.Fatalf("map version %d after one failure, want 3", failed.Version)
	}
	assertOnlyShareMoved(t, m, failed, 0, 1)
	eventually(t, "MemberFailed event", func() (bool, error) { return hasEvent(t, cc, "MemberFailed", victim) })
	eventually(t, "Degraded condition", func() (bool, error) {
		err := get(t, stored, cc.Namespace, cc.Name)
		return err == nil && meta.IsStatusConditionTrue(stored.Status.Conditions, string(v1alpha1.ConditionDegraded)), err
	})

	// Operator restart mid-remap: the new operator publishes the same map.
	op.Stop()
	startOperator(t, clk)
	setPodReady(t, cc, victim, true, now.Add(-5*time.Second)) // Ready, hold-down running
	eventually(t, "status shows the member Ready again", func() (bool, error) {
		err := get(t, stored, cc.Namespace, cc.Name)
		ms, _ := memberStatus(stored, victim)
		return err == nil && ms.Ready, err
	})
	if got, _ := publishedMap(t, cc); got.Version != 3 || memberState(got, victim) != partmap.Failed {
		t.Fatalf("after restart within the hold-down: map v%d state %s, want v3 Failed", got.Version, memberState(got, victim))
	}

	// Ready past the hold-down: restored with exactly its old share.
	setPodReady(t, cc, victim, true, now.Add(-61*time.Second))
	eventually(t, "member restored", func() (bool, error) {
		got, err := publishedMap(t, cc)
		return err == nil && got.Version == 4 && memberState(got, victim) == partmap.Active, err
	})
	restored, _ := publishedMap(t, cc)
	assertSamePlacement(t, m, restored)
	eventually(t, "MemberRestored event", func() (bool, error) { return hasEvent(t, cc, "MemberRestored", victim) })

	// Deleted: everything it owned is gone, and so is the cluster.
	if err := env.Client.Delete(ctx, stored); err != nil {
		t.Fatal(err)
	}
	eventually(t, "cluster deleted", func() (bool, error) {
		err := get(t, &v1alpha1.CacheCluster{}, cc.Namespace, cc.Name)
		return apierrors.IsNotFound(err), err
	})
	for _, list := range []client.ObjectList{&appsv1.StatefulSetList{}, &corev1.ServiceList{}, &corev1.ConfigMapList{},
		&policyv1.PodDisruptionBudgetList{}, &corev1.ServiceAccountList{}, &rbacv1.RoleList{}, &rbacv1.RoleBindingList{}} {
		if err := env.Client.List(ctx, list, client.InNamespace(cc.Namespace), client.MatchingLabels{cachecluster.LabelCluster: cc.Name}); err != nil {
			t.Fatal(err)
		}
		if n := meta.LenList(list); n != 0 {
			t.Fatalf("%T: %d objects left after delete", list, n)
		}
	}
}

func mustEncode(t *testing.T, m *partmap.Map) []byte {
	t.Helper()
	b, err := partmap.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func memberState(m *partmap.Map, name string) partmap.MemberState {
	l, i, ok := m.Member(name)
	if !ok {
		return ""
	}
	return m.Layers[l].Members[i].State
}

func hasEvent(_ *testing.T, cc *v1alpha1.CacheCluster, reason, member string) (bool, error) {
	var evs eventsv1.EventList
	if err := env.Client.List(context.Background(), &evs, client.InNamespace(cc.Namespace)); err != nil {
		return false, err
	}
	for _, e := range evs.Items {
		if e.Reason == reason && e.Regarding.Name == cc.Name && bytes.Contains([]byte(e.Note), []byte(member)) {
			return true, nil
		}
	}
	return false, nil
}

// assertOnlyShareMoved checks that in layer l only keys owned by member i
// before changed owner.
func assertOnlyShareMoved(t *testing.T, before, after *partmap.Map, l, i int) {
	t.Helper()
	pb, pa := compile(t, before), compile(t, after)
	moved := 0
	for k := range 20000 {
		key := fmt.Sprintf("key-%d", k)
		ob, oa := pb.Owner(l, key), pa.Owner(l, key)
		if ob != oa {
			if ob != i {
				t.Fatalf("key %s moved from member %d, which did not fail", key, ob)
			}
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("no key moved off the failed member")
	}
}

func assertSamePlacement(t *testing.T, a, b *partmap.Map) {
	t.Helper()
	pa, pb := compile(t, a), compile(t, b)
	for l := range a.Layers {
		for k := range 20000 {
			key := fmt.Sprintf("key-%d", k)
			if pa.Owner(l, key) != pb.Owner(l, key) {
				t.Fatalf("layer %d key %s: owner %d after restore, %d before the failure", l, key, pb.Owner(l, key), pa.Owner(l, key))
			}
		}
	}
}

func compile(t *testing.T, m *partmap.Map) *partmap.Placement {
	t.Helper()
	p, err := partmap.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
