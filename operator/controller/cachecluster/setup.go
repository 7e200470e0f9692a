package cachecluster

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/distcache/distcache/operator/api/v1alpha1"
)

// layerRefIndex indexes CacheClusters by the CacheLayers they reference.
const layerRefIndex = "spec.layerRefs"

// +kubebuilder:rbac:groups=distcache.io,resources=cacheclusters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=distcache.io,resources=cacheclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=distcache.io,resources=cacheclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=distcache.io,resources=cachelayers,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=statefulsets;deployments,verbs=get;list;watch;create;update;patch;delete;deletecollection
// +kubebuilder:rbac:groups="",resources=services;configmaps,verbs=get;list;watch;create;update;patch;delete;deletecollection
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;update;patch;delete;deletecollection
// +kubebuilder:rbac:groups=redis.redis.opstreelabs.in,resources=redis,verbs=get;list;watch;create;update;patch;delete;deletecollection
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers the reconciler: it owns the cluster's sets,
// services and map, and watches its pods and the CacheLayers it references.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.CacheCluster{}, layerRefIndex,
		func(o client.Object) []string { return o.(*v1alpha1.CacheCluster).Spec.LayerRefs }); err != nil {
		return fmt.Errorf("cannot index CacheClusters by layer: %w", err)
	}
	err := ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.CacheCluster{}).
		Owns(&appsv1.StatefulSet{}).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&networkingv1.NetworkPolicy{}).
		Owns(&corev1.ServiceAccount{}).
		Owns(&rbacv1.Role{}).
		Owns(&rbacv1.RoleBinding{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(clusterOfPod)).
		Watches(&v1alpha1.CacheLayer{}, handler.EnqueueRequestsFromMapFunc(r.clustersOfLayer)).
		Complete(r)
	if err != nil {
		return fmt.Errorf("cannot set up the CacheCluster controller: %w", err)
	}
	return nil
}

func clusterOfPod(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[LabelCluster]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
}

func (r *Reconciler) clustersOfLayer(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1alpha1.CacheClusterList
	if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{layerRefIndex: o.GetName()}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, len(list.Items))
	for i := range list.Items {
		out[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])}
	}
	return out
}
