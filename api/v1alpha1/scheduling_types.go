package v1alpha1

import corev1 "k8s.io/api/core/v1"

// PodScheduling is where the scheduler may put a set of the cluster's
// pods: a cache layer's, the storage's or the gateway's. Left unset, the
// operator spreads each set's pods over nodes (kubernetes.io/hostname) and
// zones (topology.kubernetes.io/zone) with maxSkew 1 and
// whenUnsatisfiable ScheduleAnyway, and prefers not to put two pods of a
// set on one node (docs/operator.md, "Scheduling"). Every field is for
// Kubernetes only: standalone mode runs every process on its own host and
// ignores them.
//
// +kubebuilder:validation:XValidation:rule="!has(self.topologySpreadConstraints) || self.topologySpreadConstraints.all(c, c.maxSkew >= 1)",message="scheduling.topologySpreadConstraints: maxSkew must be at least 1"
// +kubebuilder:validation:XValidation:rule="!has(self.topologySpreadConstraints) || self.topologySpreadConstraints.all(c, c.whenUnsatisfiable in ['DoNotSchedule', 'ScheduleAnyway'])",message="scheduling.topologySpreadConstraints: whenUnsatisfiable must be DoNotSchedule or ScheduleAnyway"
// +kubebuilder:validation:XValidation:rule="!has(self.topologySpreadConstraints) || self.topologySpreadConstraints.all(c, size(c.topologyKey) > 0)",message="scheduling.topologySpreadConstraints: topologyKey must name a node label, e.g. topology.kubernetes.io/zone"
// +kubebuilder:validation:XValidation:rule="!has(self.topologySpreadConstraints) || self.topologySpreadConstraints.all(c, !has(c.minDomains) || (c.minDomains >= 1 && c.whenUnsatisfiable == 'DoNotSchedule'))",message="scheduling.topologySpreadConstraints: minDomains must be at least 1, and only with whenUnsatisfiable DoNotSchedule"
// +kubebuilder:validation:XValidation:rule="!has(self.tolerations) || self.tolerations.all(t, !has(t.operator) || t.operator in ['Equal', 'Exists'])",message="scheduling.tolerations: operator must be Equal or Exists"
// +kubebuilder:validation:XValidation:rule="!has(self.tolerations) || self.tolerations.all(t, !has(t.operator) || t.operator != 'Exists' || !has(t.value) || size(t.value) == 0)",message="scheduling.tolerations: a toleration with operator Exists matches any value: leave value empty"
// +kubebuilder:validation:XValidation:rule="!has(self.tolerations) || self.tolerations.all(t, (has(t.key) && size(t.key) > 0) || (has(t.operator) && t.operator == 'Exists'))",message="scheduling.tolerations: a toleration without a key must have operator Exists (it tolerates every taint)"
// +kubebuilder:validation:XValidation:rule="!has(self.tolerations) || self.tolerations.all(t, !has(t.effect) || t.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",message="scheduling.tolerations: effect must be NoSchedule, PreferNoSchedule or NoExecute (empty: all three)"
// +kubebuilder:validation:XValidation:rule="!has(self.tolerations) || self.tolerations.all(t, !has(t.tolerationSeconds) || (has(t.effect) && t.effect == 'NoExecute'))",message="scheduling.tolerations: tolerationSeconds is only for effect NoExecute"
type PodScheduling struct {
	// NodeSelector restricts the pods to nodes with these labels.
	// +kubebuilder:validation:MaxProperties=32
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Tolerations let the pods run on nodes with matching taints.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// Affinity replaces the operator's default affinity field by field:
	// nodeAffinity and podAffinity as given, and podAntiAffinity, when
	// set, instead of the default preferred anti-affinity by hostname
	// among the set's pods (podAntiAffinity: {} drops it).
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// TopologySpreadConstraints replace the operator's default spread
	// over hostname and zone. A constraint without a labelSelector
	// spreads the set's own pods (the operator fills in their labels).
	// At most one constraint per topologyKey and whenUnsatisfiable.
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=topologyKey
	// +listMapKey=whenUnsatisfiable
	// +optional
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	// PriorityClassName names the PriorityClass of the pods.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="scheduling.priorityClassName must be the name of a PriorityClass: lower-case letters, digits, '-' and '.', starting and ending with a letter or digit"
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
}
