package cachecluster

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/distcache/distcache/api/v1alpha1"
)

// layerRefIndex indexes CacheClusters by the CacheLayers they reference.
const layerRefIndex = "spec.layerRefs"

// The operator's permissions: exactly what it uses, which test/rbac checks
// against the API server's audit log. Kinds it caches need list and watch
// only (its reads are served by the cache); the redis-operator's Redis is
// read uncached, and watched. Finalizers: setting blockOwnerDeletion owner
// references. ConfigMaps get: granted to the data-plane pods' Role, and RBAC
// lets the operator grant only what it holds.
// +kubebuilder:rbac:groups=distcache.io,resources=cacheclusters,verbs=list;watch;update
// +kubebuilder:rbac:groups=distcache.io,resources=cacheclusters/status,verbs=patch
// +kubebuilder:rbac:groups=distcache.io,resources=cacheclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=distcache.io,resources=cachelayers,verbs=list;watch
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=list;watch;create;update;delete;deletecollection
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=list;watch;create;update;delete;deletecollection
// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=list;watch;create;update;delete;deletecollection
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;deletecollection
// +kubebuilder:rbac:groups="",resources=services,verbs=list;watch;create;update;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=list;watch;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=list;watch;create;update;delete;deletecollection
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=list;watch;create;update;delete;deletecollection
// +kubebuilder:rbac:groups=redis.redis.opstreelabs.in,resources=redis,verbs=get;list;watch;create;update;deletecollection
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers the reconciler: it owns the cluster's sets,
// services and map, and watches its pods, the CacheLayers it references
// and the SwitchFabrics whose status reports its switch members.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.CacheCluster{}, layerRefIndex,
		func(o client.Object) []string { return o.(*v1alpha1.CacheCluster).Spec.LayerRefs }); err != nil {
		return fmt.Errorf("cannot index CacheClusters by layer: %w", err)
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.CacheCluster{}).
		Owns(&appsv1.StatefulSet{}).
		Owns(&appsv1.Deployment{}).
		Owns(&appsv1.DaemonSet{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&networkingv1.NetworkPolicy{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Owns(&corev1.ServiceAccount{}).
		Owns(&rbacv1.Role{}).
		Owns(&rbacv1.RoleBinding{}).
		Owns(&batchv1.CronJob{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(clusterOfPod)).
		Watches(&v1alpha1.CacheLayer{}, handler.EnqueueRequestsFromMapFunc(r.clustersOfLayer)).
		Watches(&v1alpha1.SwitchFabric{}, r.clustersOfFabric())
	// The redis-operator's Redis objects, where its CRD is installed: one
	// changed or deleted behind the operator's back is put back.
	if _, err := mgr.GetRESTMapper().RESTMapping(RedisGVK.GroupKind(), RedisGVK.Version); err == nil {
		redis := &unstructured.Unstructured{}
		redis.SetGroupVersionKind(RedisGVK)
		b = b.Owns(redis)
	} else {
		mgr.GetLogger().Info("not watching the redis-operator's Redis objects: its CRD is not installed", "kind", RedisGVK.String())
	}
	if err := b.Complete(r); err != nil {
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
