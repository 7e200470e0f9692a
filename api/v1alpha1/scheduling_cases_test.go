package v1alpha1_test

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/api/v1alpha1"
)

// Messages of the PodScheduling rules (scheduling_types.go).
const (
	msgSpreadMaxSkew      = "scheduling.topologySpreadConstraints: maxSkew must be at least 1"
	msgSpreadWhen         = "scheduling.topologySpreadConstraints: whenUnsatisfiable must be DoNotSchedule or ScheduleAnyway"
	msgSpreadKey          = "scheduling.topologySpreadConstraints: topologyKey must name a node label"
	msgSpreadMinDomains   = "scheduling.topologySpreadConstraints: minDomains must be at least 1, and only with whenUnsatisfiable DoNotSchedule"
	msgTolerationOperator = "scheduling.tolerations: operator must be Equal or Exists"
	msgTolerationExists   = "scheduling.tolerations: a toleration with operator Exists matches any value"
	msgTolerationNoKey    = "scheduling.tolerations: a toleration without a key must have operator Exists"
	msgTolerationEffect   = "scheduling.tolerations: effect must be NoSchedule, PreferNoSchedule or NoExecute"
	msgTolerationSeconds  = "scheduling.tolerations: tolerationSeconds is only for effect NoExecute"
	msgPriorityClass      = "scheduling.priorityClassName must be the name of a PriorityClass"
)

// spread is a topology spread constraint over key.
func spread(key string, skew int32, when corev1.UnsatisfiableConstraintAction) corev1.TopologySpreadConstraint {
	return corev1.TopologySpreadConstraint{TopologyKey: key, MaxSkew: skew, WhenUnsatisfiable: when}
}

// schedulingOwner is a place a PodScheduling goes: obj wraps a
// scheduling into a valid object, whose scheduling is at field.
type schedulingOwner struct {
	name  string
	obj   func(*v1alpha1.PodScheduling) client.Object
	field string
}

// schedulingOwners are every place a PodScheduling goes.
func schedulingOwners() []schedulingOwner {
	return []schedulingOwner{
		{"inline layer", func(s *v1alpha1.PodScheduling) client.Object {
			return newCluster(withLayers(newLayer("spine", withScheduling(s))))
		}, "spec.layers[0].scheduling"},
		{"CacheLayer", func(s *v1alpha1.PodScheduling) client.Object { return newCacheLayer(withScheduling(s)) }, "spec.scheduling"},
		{"storage", func(s *v1alpha1.PodScheduling) client.Object {
			return newCluster(withStorage(func(st *v1alpha1.StorageSpec) { st.Scheduling = s }))
		}, "spec.storage.scheduling"},
		{"gateway", func(s *v1alpha1.PodScheduling) client.Object {
			return newCluster(withGateway(func(g *v1alpha1.GatewaySpec) { g.Scheduling = s }))
		}, "spec.gateway.scheduling"},
	}
}

// withScheduling sets the layer's scheduling.
func withScheduling(s *v1alpha1.PodScheduling) layerOption {
	return func(l *v1alpha1.CacheLayerSpec) { l.Scheduling = s }
}

// schedulingRuleCases break each PodScheduling rule once in every place a
// scheduling goes.
func schedulingRuleCases() []ruleCase {
	rules := []struct {
		name  string
		s     v1alpha1.PodScheduling
		field string // below the scheduling; "" for the scheduling itself
		msg   string
	}{
		{"maxSkew 0", v1alpha1.PodScheduling{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{
			spread("kubernetes.io/hostname", 0, corev1.ScheduleAnyway)}}, "", msgSpreadMaxSkew},
		{"unknown whenUnsatisfiable", v1alpha1.PodScheduling{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{
			spread("kubernetes.io/hostname", 1, "Sometimes")}}, "", msgSpreadWhen},
		{"empty topologyKey", v1alpha1.PodScheduling{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{
			spread("", 1, corev1.ScheduleAnyway)}}, "", msgSpreadKey},
		{"minDomains with ScheduleAnyway", v1alpha1.PodScheduling{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{
			func() corev1.TopologySpreadConstraint {
				c := spread("topology.kubernetes.io/zone", 1, corev1.ScheduleAnyway)
				c.MinDomains = ptr.To[int32](3)
				return c
			}()}}, "", msgSpreadMinDomains},
		{"toleration operator In", v1alpha1.PodScheduling{Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: "In", Value: "cache"}}}, "", msgTolerationOperator},
		{"toleration Exists with a value", v1alpha1.PodScheduling{Tolerations: []corev1.Toleration{
			{Key: "dedicated", Operator: corev1.TolerationOpExists, Value: "cache"}}}, "", msgTolerationExists},
		{"toleration without a key, Equal", v1alpha1.PodScheduling{Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpEqual, Value: "cache"}}}, "", msgTolerationNoKey},
		{"toleration effect NoRun", v1alpha1.PodScheduling{Tolerations: []corev1.Toleration{{Key: "dedicated", Value: "cache", Effect: "NoRun"}}}, "", msgTolerationEffect},
		{"tolerationSeconds with NoSchedule", v1alpha1.PodScheduling{Tolerations: []corev1.Toleration{
			{Key: "dedicated", Value: "cache", Effect: corev1.TaintEffectNoSchedule, TolerationSeconds: ptr.To[int64](30)}}}, "", msgTolerationSeconds},
		{"priorityClassName with upper case", v1alpha1.PodScheduling{PriorityClassName: "Cache-Critical"}, ".priorityClassName", msgPriorityClass},
		{"priorityClassName ending in '-'", v1alpha1.PodScheduling{PriorityClassName: "cache-"}, ".priorityClassName", msgPriorityClass},
	}
	var out []ruleCase
	for _, r := range rules {
		for _, o := range schedulingOwners() {
			s := r.s
			out = append(out, ruleCase{"scheduling of " + o.name + ": " + r.name, o.obj(&s), o.field + r.field, r.msg})
		}
	}
	return out
}

// schedulingValidCases are schedulings at the edges of the rules, in
// every place a scheduling goes.
func schedulingValidCases() []validCase {
	full := v1alpha1.PodScheduling{
		NodeSelector: map[string]string{"node.kubernetes.io/instance-type": "cache-large"},
		Tolerations: []corev1.Toleration{
			{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "cache", Effect: corev1.TaintEffectNoSchedule},
			{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](30)},
			{Operator: corev1.TolerationOpExists},
		},
		Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-a", "zone-b"}}}}},
		}}, PodAntiAffinity: &corev1.PodAntiAffinity{}},
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{
			spread("kubernetes.io/hostname", 1, corev1.DoNotSchedule),
			spread("kubernetes.io/hostname", 1, corev1.ScheduleAnyway),
			func() corev1.TopologySpreadConstraint {
				c := spread("topology.kubernetes.io/zone", 2, corev1.DoNotSchedule)
				c.MinDomains = ptr.To[int32](3)
				c.LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "cache"}}
				return c
			}(),
		},
		PriorityClassName: "cache.critical-1",
	}
	var out []validCase
	for _, o := range schedulingOwners() {
		s := full
		out = append(out, validCase{"scheduling of " + o.name + " with every field", o.obj(&s)})
	}
	return out
}
