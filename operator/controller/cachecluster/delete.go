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
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/distcache/distcache/api/v1alpha1"
)

// reconcileDelete deletes everything the cluster owns, then releases the
// finalizer. Owner references would let the garbage collector do the same;
// deleting explicitly also covers clusters whose collector is slow or absent
// and the redis-operator's objects.
func (r *Reconciler) reconcileDelete(ctx context.Context, cc *v1alpha1.CacheCluster) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(cc, Finalizer) {
		return ctrl.Result{}, nil
	}
	sel := []client.DeleteAllOfOption{client.InNamespace(cc.Namespace), client.MatchingLabels{LabelCluster: cc.Name}}
	redis := &unstructured.Unstructured{}
	redis.SetGroupVersionKind(RedisGVK)
	for _, obj := range []client.Object{&appsv1.StatefulSet{}, &appsv1.Deployment{}, &appsv1.DaemonSet{}, &corev1.ConfigMap{}, &networkingv1.NetworkPolicy{},
		&policyv1.PodDisruptionBudget{}, &corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}, &batchv1.CronJob{}, redis} {
		err := r.DeleteAllOf(ctx, obj, sel...)
		if err != nil && !meta.IsNoMatchError(err) { // no redis-operator installed: nothing to delete
			return ctrl.Result{}, fmt.Errorf("cannot delete %T of %s: %w", obj, cc.Name, err)
		}
	}
	// Services have no DeleteCollection; delete them one by one.
	var svcs corev1.ServiceList
	if err := r.List(ctx, &svcs, client.InNamespace(cc.Namespace), client.MatchingLabels{LabelCluster: cc.Name}); err != nil {
		return ctrl.Result{}, fmt.Errorf("cannot list services of %s: %w", cc.Name, err)
	}
	for i := range svcs.Items {
		if err := r.Delete(ctx, &svcs.Items[i]); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("cannot delete service %s: %w", svcs.Items[i].Name, err)
		}
	}
	if r.Recorder != nil {
		r.Recorder.Eventf(cc, nil, corev1.EventTypeNormal, v1alpha1.ReasonDeleting, "Delete", "deleted the cluster's objects")
	}
	if r.Applied != nil {
		r.Applied.Forget(cc.Namespace + "/" + cc.Name)
	}
	r.readiness.forget(cc.Namespace + "/" + cc.Name)
	r.copiesHistory.forget(cc.Namespace + "/" + cc.Name)
	r.Metrics.forget(cc.Namespace, cc.Name)
	controllerutil.RemoveFinalizer(cc, Finalizer)
	if err := r.Update(ctx, cc); err != nil {
		return ctrl.Result{}, fmt.Errorf("cannot remove finalizer of %s: %w", cc.Name, client.IgnoreNotFound(err))
	}
	return ctrl.Result{}, nil
}
