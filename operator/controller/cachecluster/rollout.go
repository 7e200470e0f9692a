package cachecluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Rolling the data-plane pods onto their StatefulSets' templates.
//
// The cluster's StatefulSets use the OnDelete update strategy: the
// operator rolls their pods itself, one pod of the cluster at a time, and
// only while every other pod of the sets is Ready on its set's template.
// A pod whose template changed only in container images is updated in
// place: the operator patches the images into the pod, and the kubelet
// restarts just the containers whose image changed. The pod keeps its IP
// and volumes, and the other containers keep running. So an upgrade of
// DistCache restarts each storage shim beside a Redis server that keeps
// serving from memory, and each cache node in its pod at the same address:
// reads of a shard wait a shim's restart (a second or so) instead of a new
// pod's scheduling, start and Redis load, and the map needs no new
// address. Any other change recreates the pod: the operator deletes it
// and the set creates it from the new template. A pod that is outdated
// and not Ready is rolled first, whatever the others do: it serves
// nothing anyway, and waiting for it would keep a broken release in
// place.

// AnnotationPodSpecHash is the hash of a pod template's spec without its
// container images: two templates with the same hash differ at most in
// images, and a pod of the older one can be updated in place.
const AnnotationPodSpecHash = "distcache.io/pod-spec-hash"

// annotationRolled records, on a pod updated in place, the restart count
// of each container the update changed: name=count, comma-separated. The
// pod has settled when each of them restarted since and is ready.
const annotationRolled = "distcache.io/rolled-restarts"

// Events of the rollout, on the cluster, regarding the pod.
const (
	EventPodUpdatedInPlace = "PodUpdatedInPlace"
	EventPodRecreated      = "PodRecreated"
)

// withRollout makes sts's pods rolled by the operator: the OnDelete
// strategy, and its template's spec hash. Call it once the template is set.
func withRollout(sts *appsv1.StatefulSet) {
	sts.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
	if sts.Spec.Template.Annotations == nil {
		sts.Spec.Template.Annotations = map[string]string{}
	}
	sts.Spec.Template.Annotations[AnnotationPodSpecHash] = podSpecHash(&sts.Spec.Template.Spec)
}

// podSpecHash hashes what the operator sets in a template's spec, with
// the containers' images left out.
func podSpecHash(spec *corev1.PodSpec) string {
	blank := func(cs []corev1.Container) []corev1.Container {
		out := slices.Clone(cs)
		for i := range out {
			out[i].Image = ""
		}
		return out
	}
	b, err := json.Marshal(struct {
		Containers, InitContainers []corev1.Container
		Volumes                    []corev1.Volume
		ServiceAccountName         string
		SecurityContext            *corev1.PodSecurityContext
		// Scheduling cannot change in a running pod either.
		NodeSelector              map[string]string                 `json:",omitempty"`
		Tolerations               []corev1.Toleration               `json:",omitempty"`
		Affinity                  *corev1.Affinity                  `json:",omitempty"`
		TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:",omitempty"`
		PriorityClassName         string                            `json:",omitempty"`
	}{blank(spec.Containers), blank(spec.InitContainers), spec.Volumes, spec.ServiceAccountName, spec.SecurityContext,
		spec.NodeSelector, spec.Tolerations, spec.Affinity, spec.TopologySpreadConstraints, spec.PriorityClassName})
	if err != nil {
		panic(fmt.Sprintf("cannot hash a pod spec: %v", err)) // every field marshals
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// rollStep is the next pod to roll and how.
type rollStep struct {
	pod     *corev1.Pod
	set     *appsv1.StatefulSet
	inPlace bool
}

// planRoll returns the next step of the rollout of sets, whose pods are
// among pods (by name), and how many of their pods are on an older
// template. It returns no step when none is outdated, when a set's
// controller has not seen its template yet, or when a pod is not settled
// (starting, restarting, deleted) and no outdated pod is down anyway.
func planRoll(sets []*appsv1.StatefulSet, pods map[string]*corev1.Pod) (next *rollStep, outdated int) {
	var down, up *rollStep // an outdated pod that serves nothing, one that serves
	busy := false
	for _, set := range sets {
		rev := set.Status.UpdateRevision
		if set.Status.ObservedGeneration < set.Generation || rev == "" {
			busy = true
			continue
		}
		owned := 0
		for _, pod := range podsOf(set, pods) {
			owned++
			if pod.Labels[appsv1.ControllerRevisionHashLabelKey] == rev {
				busy = busy || !settled(pod)
				continue
			}
			outdated++
			step := &rollStep{pod: pod, set: set,
				inPlace: pod.Annotations[AnnotationPodSpecHash] != "" &&
					pod.Annotations[AnnotationPodSpecHash] == set.Spec.Template.Annotations[AnnotationPodSpecHash]}
			switch {
			case !live(pod):
				busy = true // being deleted: the set recreates it
			case !podReady(pod):
				down = cmpOr(down, step)
			default:
				up = cmpOr(up, step)
			}
		}
		if set.Spec.Replicas != nil && owned < int(*set.Spec.Replicas) {
			busy = true // the set is creating pods
		}
	}
	switch {
	case down != nil:
		return down, outdated
	case busy || up == nil:
		return nil, outdated
	}
	return up, outdated
}

// cmpOr keeps the first step found.
func cmpOr(cur, s *rollStep) *rollStep {
	if cur != nil {
		return cur
	}
	return s
}

// podsOf are set's pods among pods, by ordinal.
func podsOf(set *appsv1.StatefulSet, pods map[string]*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == set.UID {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// settled says whether pod is Ready and, if it was updated in place, each
// container the update changed has restarted since and is ready.
func settled(pod *corev1.Pod) bool {
	if !podReady(pod) {
		return false
	}
	rolled := pod.Annotations[annotationRolled]
	if rolled == "" {
		return true
	}
	for _, e := range strings.Split(rolled, ",") {
		name, count, _ := strings.Cut(e, "=")
		before, err := strconv.Atoi(count)
		if err != nil {
			continue // not ours to read
		}
		i := slices.IndexFunc(pod.Status.ContainerStatuses, func(c corev1.ContainerStatus) bool { return c.Name == name })
		if i < 0 {
			return false
		}
		if c := pod.Status.ContainerStatuses[i]; int(c.RestartCount) <= before || !c.Ready {
			return false
		}
	}
	return true
}

// rollPods takes the next step of the rollout of the cluster's
// StatefulSets (planRoll); pod and set events bring the next reconcile.
func (r *Reconciler) rollPods(ctx context.Context, s *state) (ctrl.Result, error) {
	next, outdated := planRoll(s.sets, s.pods)
	s.outdatedPods = int32(outdated)
	if next == nil {
		return ctrl.Result{}, nil
	}
	if next.inPlace {
		return ctrl.Result{}, r.updateInPlace(ctx, s, next)
	}
	if err := r.Delete(ctx, next.pod, client.Preconditions{UID: &next.pod.UID}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
		return ctrl.Result{}, fmt.Errorf("cannot recreate pod %s onto its set's template: %w", next.pod.Name, err)
	}
	r.Recorder.Eventf(s.cc, next.pod, corev1.EventTypeNormal, EventPodRecreated, "Roll",
		"pod %s recreated onto %s's template (revision %s): more than images changed", next.pod.Name, next.set.Name, next.set.Status.UpdateRevision)
	return ctrl.Result{}, nil
}

// updateInPlace patches the images of step's pod from its set's template
// and moves it to the set's revision; the kubelet restarts the containers
// whose image changed.
func (r *Reconciler) updateInPlace(ctx context.Context, s *state, step *rollStep) error {
	pod := step.pod
	next := pod.DeepCopy()
	var rolled, changed []string
	for _, want := range step.set.Spec.Template.Spec.Containers {
		i := slices.IndexFunc(next.Spec.Containers, func(c corev1.Container) bool { return c.Name == want.Name })
		if i < 0 || next.Spec.Containers[i].Image == want.Image {
			continue
		}
		next.Spec.Containers[i].Image = want.Image
		restarts := int32(0)
		if j := slices.IndexFunc(pod.Status.ContainerStatuses, func(c corev1.ContainerStatus) bool { return c.Name == want.Name }); j >= 0 {
			restarts = pod.Status.ContainerStatuses[j].RestartCount
		}
		rolled = append(rolled, fmt.Sprintf("%s=%d", want.Name, restarts))
		changed = append(changed, want.Name+" → "+want.Image)
	}
	if next.Annotations == nil {
		next.Annotations = map[string]string{}
	}
	if len(rolled) > 0 {
		next.Annotations[annotationRolled] = strings.Join(rolled, ",")
	} else {
		delete(next.Annotations, annotationRolled)
	}
	next.Labels[appsv1.ControllerRevisionHashLabelKey] = step.set.Status.UpdateRevision
	if err := r.Patch(ctx, next, client.MergeFromWithOptions(pod, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil // the pod changed: its event brings another reconcile
		}
		return fmt.Errorf("cannot update pod %s in place: %w", pod.Name, err)
	}
	r.Recorder.Eventf(s.cc, pod, corev1.EventTypeNormal, EventPodUpdatedInPlace, "Roll",
		"pod %s updated in place to %s's revision %s: %s", pod.Name, step.set.Name, step.set.Status.UpdateRevision, strings.Join(changed, ", "))
	return nil
}
