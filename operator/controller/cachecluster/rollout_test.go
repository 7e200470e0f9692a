package cachecluster

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// rollSet is a StatefulSet of n pods whose controller has seen revision
// rev of its template, with spec hash hash.
func rollSet(name string, n int32, rev, hash string) *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), Generation: 2}}
	s.Spec.Replicas = ptr.To(n)
	s.Spec.Template.Annotations = map[string]string{AnnotationPodSpecHash: hash}
	s.Status = appsv1.StatefulSetStatus{ObservedGeneration: 2, UpdateRevision: rev}
	return s
}

// rollPod is pod i of set, at revision rev with spec hash hash, Ready or
// not.
func rollPod(set *appsv1.StatefulSet, i int, rev, hash string, ready bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name:        fmt.Sprintf("%s-%d", set.Name, i),
		Labels:      map[string]string{appsv1.ControllerRevisionHashLabelKey: rev},
		Annotations: map[string]string{AnnotationPodSpecHash: hash},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: set.Name,
			UID: set.UID, Controller: ptr.To(true)}},
	}}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	return p
}

func TestPlanRoll(t *testing.T) {
	type podSpec struct {
		set         int
		rev, hash   string
		ready       bool
		deleting    bool
		restarted   bool // an in-place update annotated, container restarted since
		unrestarted bool // an in-place update annotated, container not restarted yet
	}
	tests := []struct {
		name         string
		sets         []*appsv1.StatefulSet
		pods         []podSpec
		wantPod      string // "" for no step
		wantInPlace  bool
		wantOutdated int
	}{
		{
			name: "all current: nothing to do",
			sets: []*appsv1.StatefulSet{rollSet("a", 2, "r2", "h")},
			pods: []podSpec{{0, "r2", "h", true, false, false, false}, {0, "r2", "h", true, false, false, false}},
		},
		{
			name:        "only images changed: in place, first by name",
			sets:        []*appsv1.StatefulSet{rollSet("a", 2, "r2", "h")},
			pods:        []podSpec{{0, "r1", "h", true, false, false, false}, {0, "r1", "h", true, false, false, false}},
			wantPod:     "a-0",
			wantInPlace: true, wantOutdated: 2,
		},
		{
			name:    "more than images changed: recreate",
			sets:    []*appsv1.StatefulSet{rollSet("a", 1, "r2", "h2")},
			pods:    []podSpec{{0, "r1", "h1", true, false, false, false}},
			wantPod: "a-0", wantOutdated: 1,
		},
		{
			name:    "a pod of an older operator (no hash): recreate",
			sets:    []*appsv1.StatefulSet{rollSet("a", 1, "r2", "h")},
			pods:    []podSpec{{0, "r1", "", true, false, false, false}},
			wantPod: "a-0", wantOutdated: 1,
		},
		{
			name:         "another pod not Ready: wait",
			sets:         []*appsv1.StatefulSet{rollSet("a", 1, "r2", "h"), rollSet("b", 1, "r2", "h")},
			pods:         []podSpec{{0, "r1", "h", true, false, false, false}, {1, "r2", "h", false, false, false, false}},
			wantOutdated: 1,
		},
		{
			name:         "a pod being deleted: wait",
			sets:         []*appsv1.StatefulSet{rollSet("a", 2, "r2", "h")},
			pods:         []podSpec{{0, "r1", "h", true, false, false, false}, {0, "r1", "h", true, true, false, false}},
			wantOutdated: 2,
		},
		{
			name:         "an in-place update whose container has not restarted yet: wait",
			sets:         []*appsv1.StatefulSet{rollSet("a", 2, "r2", "h")},
			pods:         []podSpec{{0, "r2", "h", true, false, false, true}, {0, "r1", "h", true, false, false, false}},
			wantOutdated: 1,
		},
		{
			name:        "an in-place update that restarted and is ready: go on",
			sets:        []*appsv1.StatefulSet{rollSet("a", 2, "r2", "h")},
			pods:        []podSpec{{0, "r2", "h", true, false, true, false}, {0, "r1", "h", true, false, false, false}},
			wantPod:     "a-1",
			wantInPlace: true, wantOutdated: 1,
		},
		{
			name:        "an outdated pod that is down goes first, whatever the others do",
			sets:        []*appsv1.StatefulSet{rollSet("a", 1, "r2", "h"), rollSet("b", 2, "r2", "h")},
			pods:        []podSpec{{0, "r1", "h", true, false, false, false}, {1, "r2", "h", false, false, false, false}, {1, "r1", "h", false, false, false, false}},
			wantPod:     "b-1",
			wantInPlace: true, wantOutdated: 2,
		},
		{
			name: "a set whose controller has not seen its template: wait",
			sets: func() []*appsv1.StatefulSet {
				s := rollSet("a", 1, "r2", "h")
				s.Generation = 3
				return []*appsv1.StatefulSet{s, rollSet("b", 1, "r2", "h")}
			}(),
			pods:         []podSpec{{0, "r1", "h", true, false, false, false}, {1, "r1", "h", true, false, false, false}},
			wantOutdated: 1,
		},
		{
			name:         "a set still creating pods: wait",
			sets:         []*appsv1.StatefulSet{rollSet("a", 2, "r2", "h")},
			pods:         []podSpec{{0, "r1", "h", true, false, false, false}},
			wantOutdated: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pods := map[string]*corev1.Pod{}
			ordinal := map[int]int{}
			for _, ps := range tc.pods {
				set := tc.sets[ps.set]
				p := rollPod(set, ordinal[ps.set], ps.rev, ps.hash, ps.ready)
				ordinal[ps.set]++
				if ps.deleting {
					p.DeletionTimestamp = ptr.To(metav1.Now())
				}
				if ps.restarted || ps.unrestarted {
					p.Annotations[annotationRolled] = "shim=1"
					restarts := int32(1)
					if ps.restarted {
						restarts = 2
					}
					p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "shim", RestartCount: restarts, Ready: true}}
				}
				pods[p.Name] = p
			}
			next, outdated := planRoll(tc.sets, pods)
			if outdated != tc.wantOutdated {
				t.Errorf("outdated = %d, want %d", outdated, tc.wantOutdated)
			}
			switch {
			case tc.wantPod == "" && next != nil:
				t.Fatalf("step %s (in place %v), want none", next.pod.Name, next.inPlace)
			case tc.wantPod != "" && next == nil:
				t.Fatalf("no step, want %s", tc.wantPod)
			case next != nil && (next.pod.Name != tc.wantPod || next.inPlace != tc.wantInPlace):
				t.Fatalf("step %s (in place %v), want %s (in place %v)", next.pod.Name, next.inPlace, tc.wantPod, tc.wantInPlace)
			}
		})
	}
}

// TestPodSpecHashIgnoresImagesOnly: a template that differs only in its
// containers' images has the same hash; any other difference changes it.
func TestPodSpecHashIgnoresImagesOnly(t *testing.T) {
	spec := func(image string, args ...string) *corev1.PodSpec {
		return &corev1.PodSpec{ServiceAccountName: "sa", Containers: []corev1.Container{
			{Name: "redis", Image: "redis:7.4"}, {Name: "shim", Image: image, Args: args}}}
	}
	base := podSpecHash(spec("distcache:v1", "shim"))
	if got := podSpecHash(spec("distcache:v2", "shim")); got != base {
		t.Errorf("a new image changed the hash: %s, want %s", got, base)
	}
	if got := podSpecHash(spec("distcache:v1", "shim", "--bundle")); got == base {
		t.Error("a new argument kept the hash")
	}
}
