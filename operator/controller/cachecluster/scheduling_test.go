package cachecluster_test

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/operator/controller/cachecluster"
)

// podLabels are the labels of a set's pods, as its selector matches them.
func podLabels(t *testing.T, spec *corev1.PodTemplateSpec) map[string]string {
	t.Helper()
	if len(spec.Labels) == 0 {
		t.Fatal("pod template without labels")
	}
	return spec.Labels
}

// wantDefaultScheduling checks that a pod template spreads its set's pods
// (labelled lbl) over hostname and zone, softly, and prefers a node that
// runs none of them, with nothing else set.
func wantDefaultScheduling(t *testing.T, what string, spec corev1.PodSpec, lbl map[string]string) {
	t.Helper()
	sel := &metav1.LabelSelector{MatchLabels: lbl}
	want := []corev1.TopologySpreadConstraint{
		{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: sel},
		{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: sel},
	}
	if !apiequality.Semantic.DeepEqual(spec.TopologySpreadConstraints, want) {
		t.Errorf("%s: topology spread %+v, want %+v", what, spec.TopologySpreadConstraints, want)
	}
	wantAffinity := &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
		{Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname", LabelSelector: sel}},
	}}}
	if !apiequality.Semantic.DeepEqual(spec.Affinity, wantAffinity) {
		t.Errorf("%s: affinity %+v, want %+v", what, spec.Affinity, wantAffinity)
	}
	if spec.NodeSelector != nil || spec.Tolerations != nil || spec.PriorityClassName != "" {
		t.Errorf("%s: node selector %v, tolerations %v, priority class %q; want none", what, spec.NodeSelector, spec.Tolerations, spec.PriorityClassName)
	}
}

// TestSchedulingDefaultsAndOverrides: with no scheduling, every layer's,
// rack's and the gateway Deployment's pods spread over nodes and zones
// and avoid sharing a node with their set; a layer's scheduling replaces
// what it sets, and a storage scheduling added later changes the racks'
// templates (and their pod-spec hash: the pods are recreated, not
// updated in place).
func TestSchedulingDefaultsAndOverrides(t *testing.T) {
	startOperator(t, &clock{t: time.Now()})
	zones := &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-a", "zone-b"}}}}},
	}}
	custom := &v1alpha1.PodScheduling{
		NodeSelector:      map[string]string{"node.kubernetes.io/instance-type": "cache-large"},
		Tolerations:       []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "cache", Effect: corev1.TaintEffectNoSchedule}},
		Affinity:          &corev1.Affinity{NodeAffinity: zones},
		PriorityClassName: "cache-critical",
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{
			{MaxSkew: 2, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.DoNotSchedule},
		},
	}
	cc := newCluster(t, "sched", withStorage(v1alpha1.StorageManaged, 2, 2), withLayer("spine", 3, false), withLayer("leaf", 0, true),
		func(cc *v1alpha1.CacheCluster) {
			cc.Spec.Layers[1].Scheduling = custom
			cc.Spec.Gateway.Replicas = ptr.To[int32](2)
		})

	sets := map[string]*appsv1.StatefulSet{}
	for _, name := range []string{"sched-spine", "sched-leaf", "sched-rack-0", "sched-rack-1"} {
		sts := &appsv1.StatefulSet{}
		eventually(t, "StatefulSet "+name, func() (bool, error) { return get(t, sts, cc.Namespace, name) == nil, nil })
		sets[name] = sts
	}
	dep := &appsv1.Deployment{}
	eventually(t, "gateway Deployment", func() (bool, error) {
		return get(t, dep, cc.Namespace, cachecluster.GatewayName(cc.Name)) == nil, nil
	})
	for _, name := range []string{"sched-spine", "sched-rack-0", "sched-rack-1"} {
		wantDefaultScheduling(t, name, sets[name].Spec.Template.Spec, podLabels(t, &sets[name].Spec.Template))
	}
	wantDefaultScheduling(t, "gateway", dep.Spec.Template.Spec, podLabels(t, &dep.Spec.Template))

	leaf := sets["sched-leaf"].Spec.Template.Spec
	lbl := podLabels(t, &sets["sched-leaf"].Spec.Template)
	if leaf.NodeSelector["node.kubernetes.io/instance-type"] != "cache-large" || len(leaf.Tolerations) != 1 || leaf.PriorityClassName != "cache-critical" {
		t.Errorf("leaf: node selector %v, tolerations %v, priority class %q; want the layer's", leaf.NodeSelector, leaf.Tolerations, leaf.PriorityClassName)
	}
	wantSpread := []corev1.TopologySpreadConstraint{{MaxSkew: 2, TopologyKey: "topology.kubernetes.io/zone",
		WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: lbl}}}
	if !apiequality.Semantic.DeepEqual(leaf.TopologySpreadConstraints, wantSpread) {
		t.Errorf("leaf: topology spread %+v, want the layer's, on its pods' labels: %+v", leaf.TopologySpreadConstraints, wantSpread)
	}
	if a := leaf.Affinity; a == nil || !apiequality.Semantic.DeepEqual(a.NodeAffinity, zones) || a.PodAntiAffinity == nil ||
		len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Errorf("leaf: affinity %+v, want the layer's node affinity and the default anti-affinity", a)
	}

	// Storage scheduling added: the racks take it, with a new pod-spec hash.
	rack := sets["sched-rack-0"]
	oldHash := rack.Spec.Template.Annotations[cachecluster.AnnotationPodSpecHash]
	stored := &v1alpha1.CacheCluster{}
	if err := get(t, stored, cc.Namespace, cc.Name); err != nil {
		t.Fatal(err)
	}
	base := stored.DeepCopy()
	stored.Spec.Storage.Scheduling = &v1alpha1.PodScheduling{
		Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{}}, // no anti-affinity
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{
			{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.DoNotSchedule},
		},
	}
	if err := env.Client.Patch(context.Background(), stored, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "rack set with the storage's scheduling", func() (bool, error) {
		if err := get(t, rack, cc.Namespace, "sched-rack-0"); err != nil {
			return false, err
		}
		c := rack.Spec.Template.Spec.TopologySpreadConstraints
		return len(c) == 1 && c[0].WhenUnsatisfiable == corev1.DoNotSchedule, nil
	})
	if a := rack.Spec.Template.Spec.Affinity; a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 0 {
		t.Errorf("rack: affinity %+v, want the storage's empty podAntiAffinity", a)
	}
	if h := rack.Spec.Template.Annotations[cachecluster.AnnotationPodSpecHash]; h == oldHash {
		t.Errorf("rack: pod-spec hash %s unchanged by a new scheduling: its pods would be updated in place", h)
	}
}
