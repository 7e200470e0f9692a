package cachecluster

import (
	"context"
	"fmt"
	"maps"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/api/v1alpha1"
)

// reconcileDisruptionBudgets keeps a PodDisruptionBudget for each
// software layer's StatefulSet, each managed rack's StatefulSet and the
// gateway Deployment when it runs at least two pods: maxUnavailable 1, so
// that a node drain evicts one pod of a set at a time and waits for it to
// be Ready again before the next. A managed rack without
// storage.persistence gets maxUnavailable 0: its Redis servers keep their
// data in the pod (an emptyDir volume), which an eviction would lose, so
// a drain of its node waits until someone moves the pod on purpose. Each
// is named as its set and labelled as its pods. Budgets of the cluster
// that no longer have a set (a layer removed, the gateway scaled down)
// are deleted.
func (r *Reconciler) reconcileDisruptionBudgets(ctx context.Context, s *state) (ctrl.Result, error) {
	type budget struct {
		labels         map[string]string // of the set's pods
		maxUnavailable int32
	}
	want := map[string]budget{} // by name
	for _, l := range s.topo.SoftwareLayers() {
		lbl := labels(s.cc, ComponentCacheNode)
		lbl[LabelLayer] = l.Name
		want[s.topo.LayerSetName(l.Name)] = budget{lbl, 1}
	}
	if s.cc.Spec.Storage.Mode == "" || s.cc.Spec.Storage.Mode == v1alpha1.StorageManaged {
		unavailable := int32(0)
		if s.cc.Spec.Storage.Persistence != nil {
			unavailable = 1
		}
		for rack := range s.topo.Racks() {
			lbl := labels(s.cc, ComponentStorage)
			lbl[LabelRack] = strconv.Itoa(rack)
			want[s.topo.RackName(rack)] = budget{lbl, unavailable}
		}
	}
	if gatewayMode(s.cc) == v1alpha1.GatewayDeployment && gatewayReplicas(s.cc) >= 2 {
		want[GatewayName(s.cc.Name)] = budget{labels(s.cc, ComponentGateway), 1}
	}
	for name, b := range want {
		lbl := b.labels
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.cc.Namespace}}
		if err := r.apply(ctx, s.cc, pdb, func() {
			pdb.Labels = maps.Clone(lbl)
			pdb.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(b.maxUnavailable))
			pdb.Spec.MinAvailable = nil
			pdb.Spec.Selector = &metav1.LabelSelector{MatchLabels: lbl}
		}); err != nil {
			return ctrl.Result{}, err
		}
	}
	var list policyv1.PodDisruptionBudgetList
	if err := r.List(ctx, &list, client.InNamespace(s.cc.Namespace), client.MatchingLabels{LabelCluster: s.cc.Name}); err != nil {
		return ctrl.Result{}, fmt.Errorf("cannot list PodDisruptionBudgets of %s: %w", s.cc.Name, err)
	}
	for i := range list.Items {
		pdb := &list.Items[i]
		if _, ok := want[pdb.Name]; ok || !ownedBy(pdb, s.cc) {
			continue
		}
		if err := r.deleteAll(ctx, pdb); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

// ownedBy says whether cc is obj's controller.
func ownedBy(obj client.Object, cc *v1alpha1.CacheCluster) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == cc.UID
}

// pruneLayers deletes the StatefulSet and headless Service of every layer
// the cluster no longer runs pods for (removed from the spec, or now
// backed by switches): the objects the cluster owns that carry a layer
// label the topology's software layers do not have. Their budgets go in
// reconcileDisruptionBudgets.
func (r *Reconciler) pruneLayers(ctx context.Context, s *state) (ctrl.Result, error) {
	keep := map[string]bool{}
	for _, l := range s.topo.SoftwareLayers() {
		keep[l.Name] = true
	}
	sel := []client.ListOption{client.InNamespace(s.cc.Namespace), client.MatchingLabels{LabelCluster: s.cc.Name}, client.HasLabels{LabelLayer}}
	var sets appsv1.StatefulSetList
	if err := r.List(ctx, &sets, sel...); err != nil {
		return ctrl.Result{}, fmt.Errorf("cannot list StatefulSets of %s: %w", s.cc.Name, err)
	}
	var svcs corev1.ServiceList
	if err := r.List(ctx, &svcs, sel...); err != nil {
		return ctrl.Result{}, fmt.Errorf("cannot list Services of %s: %w", s.cc.Name, err)
	}
	type object struct {
		kind string
		obj  client.Object
	}
	var found []object
	for i := range sets.Items {
		found = append(found, object{"StatefulSet", &sets.Items[i]})
	}
	for i := range svcs.Items {
		found = append(found, object{"Service", &svcs.Items[i]})
	}
	for _, f := range found {
		obj := f.obj
		layer := obj.GetLabels()[LabelLayer]
		if keep[layer] || !ownedBy(obj, s.cc) {
			continue
		}
		if err := r.deleteAll(ctx, obj); err != nil {
			return ctrl.Result{}, err
		}
		if r.Recorder != nil {
			r.Recorder.Eventf(s.cc, nil, corev1.EventTypeNormal, EventLayerPruned, "Prune",
				"layer %s is no longer in the spec: deleted its %s %s", layer, f.kind, obj.GetName())
		}
	}
	return ctrl.Result{}, nil
}

// EventLayerPruned is the event of an object of a removed layer deleted.
const EventLayerPruned = "LayerPruned"
