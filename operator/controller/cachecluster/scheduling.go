package cachecluster

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/distcache/distcache/api/v1alpha1"
)

// The failure domains the default scheduling spreads a set's pods over:
// nodes, then zones.
var defaultSpreadKeys = []string{corev1.LabelHostname, corev1.LabelTopologyZone}

// setScheduling sets the scheduling fields of a pod template's spec from
// sch, the spec's scheduling of a set whose pods carry the labels lbl. A
// field sch leaves unset takes the default: with spread, the pods spread
// over nodes and zones (maxSkew 1, ScheduleAnyway: a single node still
// takes them all) and prefer not to share a node; without it (a
// DaemonSet, whose pods are one per node), none.
func setScheduling(spec *corev1.PodSpec, sch *v1alpha1.PodScheduling, lbl map[string]string, spread bool) {
	if sch == nil {
		sch = &v1alpha1.PodScheduling{}
	}
	spec.NodeSelector = maps.Clone(sch.NodeSelector)
	spec.Tolerations = nil
	for _, t := range sch.Tolerations {
		spec.Tolerations = append(spec.Tolerations, *t.DeepCopy())
	}
	spec.PriorityClassName = sch.PriorityClassName
	spec.Affinity = affinity(sch.Affinity, lbl, spread)
	spec.TopologySpreadConstraints = nil
	for _, c := range sch.TopologySpreadConstraints {
		c = *c.DeepCopy()
		if c.LabelSelector == nil {
			c.LabelSelector = selectorOf(lbl)
		}
		spec.TopologySpreadConstraints = append(spec.TopologySpreadConstraints, c)
	}
	if len(sch.TopologySpreadConstraints) > 0 || !spread {
		return
	}
	for _, key := range defaultSpreadKeys {
		spec.TopologySpreadConstraints = append(spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
			MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: selectorOf(lbl),
		})
	}
}

// affinity is the user's affinity with, where it sets no podAntiAffinity
// and spread holds, the default: prefer a node that runs no other pod of
// the set. Nil when neither gives anything.
func affinity(user *corev1.Affinity, lbl map[string]string, spread bool) *corev1.Affinity {
	out := &corev1.Affinity{}
	if user != nil {
		out = user.DeepCopy()
	}
	if out.PodAntiAffinity == nil && spread {
		out.PodAntiAffinity = defaultAntiAffinity(lbl)
	}
	if out.NodeAffinity == nil && out.PodAffinity == nil && out.PodAntiAffinity == nil {
		return nil
	}
	return out
}

// defaultAntiAffinity prefers, with the highest weight, a node that runs
// no pod labelled lbl.
func defaultAntiAffinity(lbl map[string]string) *corev1.PodAntiAffinity {
	return &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
		Weight: 100,
		PodAffinityTerm: corev1.PodAffinityTerm{
			TopologyKey: corev1.LabelHostname, LabelSelector: selectorOf(lbl),
		},
	}}}
}

func selectorOf(lbl map[string]string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: maps.Clone(lbl)}
}

// setRedisScheduling sets, in the spec of a redis-operator Redis object,
// the scheduling its v1beta2 API has: nodeSelector, tolerations, affinity
// (the default anti-affinity among the cluster's storage pods, lbl, unless
// sch sets its own) and priorityClassName. It has no topology spread
// constraints.
func setRedisScheduling(spec map[string]any, sch *v1alpha1.PodScheduling, lbl map[string]string) error {
	if sch == nil {
		sch = &v1alpha1.PodScheduling{}
	}
	pod := &corev1.PodSpec{
		NodeSelector: sch.NodeSelector, Tolerations: sch.Tolerations,
		Affinity: affinity(sch.Affinity, lbl, true), PriorityClassName: sch.PriorityClassName,
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
	if err != nil {
		return fmt.Errorf("cannot convert the storage's scheduling: %w", err)
	}
	for _, k := range []string{"nodeSelector", "tolerations", "affinity", "priorityClassName"} {
		if v, ok := u[k]; ok {
			spec[k] = v
		}
	}
	return nil
}
