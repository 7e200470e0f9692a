// Package cachelayer reconciles CacheLayers as far as they stand alone: it
// checks that a switch-backed layer's SwitchFabric exists and reports which
// CacheClusters use the layer. The members themselves are laid out by the
// CacheCluster controller (package cachecluster), which watches layers.
package cachelayer

import (
	"context"
	"errors"
	"fmt"
	"slices"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/operator/enqueue"
)

// +kubebuilder:rbac:groups=distcache.io,resources=cachelayers,verbs=list;watch
// +kubebuilder:rbac:groups=distcache.io,resources=cachelayers/status,verbs=patch
// +kubebuilder:rbac:groups=distcache.io,resources=switchfabrics,verbs=list;watch

// Reconciler reconciles CacheLayers.
type Reconciler struct {
	client.Client
}

// Reconcile fetches the layer, checks its references and patches its status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	l := &v1alpha1.CacheLayer{}
	if err := r.Get(ctx, req.NamespacedName, l); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	base := l.DeepCopy()
	defer func() {
		l.Status.ObservedGeneration = l.Generation
		if err := r.Status().Patch(ctx, l, client.MergeFrom(base)); err != nil {
			retErr = errors.Join(retErr, fmt.Errorf("cannot patch status of CacheLayer %s: %w", l.Name, client.IgnoreNotFound(err)))
		}
	}()
	clusters, err := r.clustersUsing(ctx, l)
	if err != nil {
		return ctrl.Result{}, err
	}
	l.Status.Clusters = clusters
	ready, reason, msg := true, v1alpha1.ReasonReconciled, "the layer is valid"
	if sw := l.Spec.Switch; sw != nil {
		err := r.Get(ctx, client.ObjectKey{Namespace: l.Namespace, Name: sw.FabricRef}, &v1alpha1.SwitchFabric{})
		switch {
		case client.IgnoreNotFound(err) != nil:
			return ctrl.Result{}, fmt.Errorf("cannot get SwitchFabric %s: %w", sw.FabricRef, err)
		case err != nil:
			ready, reason, msg = false, v1alpha1.ReasonFabricNotFound, fmt.Sprintf("SwitchFabric %q does not exist", sw.FabricRef)
		default:
			msg = fmt.Sprintf("the layer's switches are those of SwitchFabric %s with role %s; its status reports their sessions", sw.FabricRef, sw.Role)
		}
	}
	set(l, v1alpha1.ConditionReady, ready, reason, msg)
	set(l, v1alpha1.ConditionProgressing, false, reason, msg)
	set(l, v1alpha1.ConditionDegraded, !ready, reason, msg)
	return ctrl.Result{}, nil
}

func (r *Reconciler) clustersUsing(ctx context.Context, l *v1alpha1.CacheLayer) ([]string, error) {
	var list v1alpha1.CacheClusterList
	if err := r.List(ctx, &list, client.InNamespace(l.Namespace)); err != nil {
		return nil, fmt.Errorf("cannot list CacheClusters: %w", err)
	}
	var out []string
	for _, cc := range list.Items {
		if slices.Contains(cc.Spec.LayerRefs, l.Name) {
			out = append(out, cc.Name)
		}
	}
	return out, nil
}

func set(l *v1alpha1.CacheLayer, t v1alpha1.ConditionType, ok bool, reason, msg string) {
	v1alpha1.SetCondition(&l.Status.Conditions, l.Generation, t, ok, reason, msg)
}

// SetupWithManager registers the reconciler; it also runs when a fabric or
// a cluster changes, since both feed the layer's status.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	allLayers := enqueue.AllInNamespace(r.Client, func() client.ObjectList { return &v1alpha1.CacheLayerList{} })
	err := ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.CacheLayer{}).
		// Only a fabric's existence feeds the status: not its status updates.
		Watches(&v1alpha1.SwitchFabric{}, allLayers, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.CacheCluster{}, allLayers).
		Complete(r)
	if err != nil {
		return fmt.Errorf("cannot set up the CacheLayer controller: %w", err)
	}
	return nil
}
