package cachecluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/distcache/distcache/api/v1alpha1"
)

// TestSetScheduling checks which defaults a pod template gets for each
// kind of set and scheduling.
func TestSetScheduling(t *testing.T) {
	lbl := map[string]string{LabelCluster: "shop", LabelComponent: ComponentGateway}
	tests := []struct {
		name                 string
		sch                  *v1alpha1.PodScheduling
		spread               bool
		wantSpread           int
		wantAntiAffinity     bool
		wantNodeAffinity     bool
		wantSelectorFilledIn bool
	}{
		{"no scheduling: the defaults", nil, true, 2, true, false, true},
		{"no scheduling, DaemonSet: nothing", nil, false, 0, false, false, false},
		{"node affinity only: the default anti-affinity and spread stay", &v1alpha1.PodScheduling{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}},
			true, 2, true, true, true},
		{"own spread without a selector: the set's labels", &v1alpha1.PodScheduling{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{
			{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule}}}, true, 1, true, false, true},
		{"podAntiAffinity {}: none", &v1alpha1.PodScheduling{Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{}}}, true, 2, false, false, true},
		{"DaemonSet with its own spread", &v1alpha1.PodScheduling{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{
			{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule}}}, false, 1, false, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := &corev1.PodSpec{}
			setScheduling(spec, tc.sch, lbl, tc.spread)
			if len(spec.TopologySpreadConstraints) != tc.wantSpread {
				t.Fatalf("%d spread constraints, want %d: %+v", len(spec.TopologySpreadConstraints), tc.wantSpread, spec.TopologySpreadConstraints)
			}
			for _, c := range spec.TopologySpreadConstraints {
				if got := c.LabelSelector != nil && c.LabelSelector.MatchLabels[LabelComponent] == ComponentGateway; got != tc.wantSelectorFilledIn {
					t.Errorf("constraint %s selects %v, want the set's labels: %v", c.TopologyKey, c.LabelSelector, tc.wantSelectorFilledIn)
				}
			}
			a := spec.Affinity
			gotAnti := a != nil && a.PodAntiAffinity != nil && len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 1
			if gotAnti != tc.wantAntiAffinity || (a != nil && a.NodeAffinity != nil) != tc.wantNodeAffinity {
				t.Errorf("affinity %+v: anti-affinity %v, node affinity %v; want %v, %v", a, gotAnti, a != nil && a.NodeAffinity != nil, tc.wantAntiAffinity, tc.wantNodeAffinity)
			}
		})
	}
	// The template's scheduling follows the spec: nothing is left of a
	// scheduling removed.
	spec := &corev1.PodSpec{}
	setScheduling(spec, &v1alpha1.PodScheduling{NodeSelector: map[string]string{"a": "b"}, PriorityClassName: "p",
		Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}}, lbl, true)
	setScheduling(spec, nil, lbl, true)
	if spec.NodeSelector != nil || spec.PriorityClassName != "" || spec.Tolerations != nil {
		t.Errorf("after the scheduling was removed: %+v", spec)
	}
}
