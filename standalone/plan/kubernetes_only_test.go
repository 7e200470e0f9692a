package plan_test

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/standalone/plan"
)

// TestNewIgnoresKubernetesOnlyFields plans a cluster with every field
// that only places or sizes pods set — the scheduling of layers, storage
// and gateway, resources, the NetworkPolicy, the backup CronJob — and finds the plan of the
// same cluster without them.
func TestNewIgnoresKubernetesOnlyFields(t *testing.T) {
	sch := &v1alpha1.PodScheduling{
		NodeSelector:      map[string]string{"disk": "ssd"},
		Tolerations:       []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}},
		PriorityClassName: "cache-critical",
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{
			{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule},
		},
	}
	cpu := corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}
	kubernetesOnly := func(s *v1alpha1.CacheClusterSpec) {
		for i := range s.Layers {
			s.Layers[i].Scheduling, s.Layers[i].Resources = sch, cpu
		}
		s.Storage.Scheduling, s.Storage.Resources, s.ShimResources = sch, cpu, cpu
		s.Gateway.Scheduling, s.Gateway.Resources = sch, cpu
		s.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Enabled: true}
		s.Storage.Backup = &v1alpha1.BackupSpec{Schedule: "@daily", VolumeClaimName: "backups", Keep: 3}
	}
	dir := t.TempDir()
	plain, err := plan.New(newCluster(t), plan.Options{RunDir: dir, Ports: sequentialPorts})
	if err != nil {
		t.Fatal(err)
	}
	set, err := plan.New(newCluster(t, kubernetesOnly), plan.Options{RunDir: dir, Ports: sequentialPorts})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(plain.Processes, set.Processes) || !reflect.DeepEqual(plain.Map, set.Map) {
		t.Fatalf("the plan changed with Kubernetes-only fields:\n%+v\nwant\n%+v", set.Processes, plain.Processes)
	}
}
