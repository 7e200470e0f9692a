package cachecluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/operator/controller/cachecluster"
)

// TestDisruptionBudgetsAndRemovedLayers: every software layer, managed
// rack and gateway Deployment of two or more pods gets a
// PodDisruptionBudget of maxUnavailable 1 over its set's pods (0 for a
// rack whose data is in its pods), owned by the cluster. A layer removed from the spec loses its StatefulSet,
// Service and budget, with an event; a gateway scaled to one pod loses
// its budget; the other sets keep theirs.
func TestDisruptionBudgetsAndRemovedLayers(t *testing.T) {
	startOperator(t, &clock{t: time.Now()})
	cc := newCluster(t, "pdb", withStorage(v1alpha1.StorageManaged, 2, 1), withLayer("spine", 2, false), withLayer("edge", 1, false),
		withLayer("leaf", 0, true), func(cc *v1alpha1.CacheCluster) { cc.Spec.Gateway.Replicas = ptr.To[int32](2) })
	gateway := cachecluster.GatewayName(cc.Name)
	sets := []string{"pdb-spine", "pdb-edge", "pdb-leaf", "pdb-rack-0", "pdb-rack-1"}
	for _, name := range append(sets, gateway) {
		pdb := &policyv1.PodDisruptionBudget{}
		eventually(t, "PodDisruptionBudget "+name, func() (bool, error) { return get(t, pdb, cc.Namespace, name) == nil, nil })
		var tpl corev1.PodTemplateSpec
		if name == gateway {
			dep := &appsv1.Deployment{}
			if err := get(t, dep, cc.Namespace, name); err != nil {
				t.Fatal(err)
			}
			tpl = dep.Spec.Template
		} else {
			sts := &appsv1.StatefulSet{}
			if err := get(t, sts, cc.Namespace, name); err != nil {
				t.Fatal(err)
			}
			tpl = sts.Spec.Template
		}
		want := 1
		if strings.Contains(name, "-rack-") {
			want = 0 // no storage.persistence: the data is in the pod
		}
		if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != want || pdb.Spec.MinAvailable != nil {
			t.Errorf("%s: maxUnavailable %v, minAvailable %v; want %d and none", name, pdb.Spec.MaxUnavailable, pdb.Spec.MinAvailable, want)
		}
		if want := (&metav1.LabelSelector{MatchLabels: tpl.Labels}); !apiequality.Semantic.DeepEqual(pdb.Spec.Selector, want) {
			t.Errorf("%s: selector %v, want its set's pods' labels %v", name, pdb.Spec.Selector, want)
		}
		if ref := metav1.GetControllerOf(pdb); ref == nil || ref.Kind != "CacheCluster" || ref.Name != cc.Name {
			t.Errorf("%s: controller %+v, want the CacheCluster", name, ref)
		}
	}

	stored := &v1alpha1.CacheCluster{}
	if err := get(t, stored, cc.Namespace, cc.Name); err != nil {
		t.Fatal(err)
	}
	base := stored.DeepCopy()
	stored.Spec.Layers = []v1alpha1.NamedLayer{stored.Spec.Layers[0], stored.Spec.Layers[2]} // edge removed
	stored.Spec.Gateway.Replicas = ptr.To[int32](1)
	if err := env.Client.Patch(context.Background(), stored, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{&appsv1.StatefulSet{}, &corev1.Service{}, &policyv1.PodDisruptionBudget{}} {
		eventually(t, "the edge layer's "+kindName(obj)+" deleted", func() (bool, error) {
			err := get(t, obj, cc.Namespace, "pdb-edge")
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		})
	}
	eventually(t, "the gateway's budget deleted", func() (bool, error) {
		err := get(t, &policyv1.PodDisruptionBudget{}, cc.Namespace, gateway)
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	eventually(t, "LayerPruned events", func() (bool, error) { return hasEvent(t, cc, cachecluster.EventLayerPruned, "StatefulSet pdb-edge") })
	for _, name := range []string{"pdb-spine", "pdb-leaf", "pdb-rack-0", "pdb-rack-1"} {
		for _, obj := range []client.Object{&appsv1.StatefulSet{}, &policyv1.PodDisruptionBudget{}} {
			if err := get(t, obj, cc.Namespace, name); err != nil {
				t.Errorf("%s %s of a set still in the spec: %v", kindName(obj), name, err)
			}
		}
	}
}

func kindName(obj client.Object) string {
	switch obj.(type) {
	case *appsv1.StatefulSet:
		return "StatefulSet"
	case *corev1.Service:
		return "Service"
	case *policyv1.PodDisruptionBudget:
		return "PodDisruptionBudget"
	}
	return "object"
}

// TestDisruptionBudgetOfPersistentRacks: a rack whose Redis servers keep
// their append-only files on volume claims may lose a pod to a drain (the
// volume follows it): maxUnavailable 1.
func TestDisruptionBudgetOfPersistentRacks(t *testing.T) {
	startOperator(t, &clock{t: time.Now()})
	cc := newCluster(t, "pdbpv", withStorage(v1alpha1.StorageManaged, 1, 1), withLayer("spine", 1, false), func(cc *v1alpha1.CacheCluster) {
		cc.Spec.Storage.Persistence = &v1alpha1.PersistenceSpec{Size: resource.MustParse("1Gi")}
	})
	pdb := &policyv1.PodDisruptionBudget{}
	eventually(t, "the rack's budget", func() (bool, error) { return get(t, pdb, cc.Namespace, "pdbpv-rack-0") == nil, nil })
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Fatalf("maxUnavailable %v, want 1 with storage.persistence", pdb.Spec.MaxUnavailable)
	}
}
