// Package switchfabric reconciles SwitchFabrics as far as this version
// goes: the API server has validated the spec (CEL rules), and the status
// reports the switches by role and that the fabric's driver (stratum or
// onos) is not part of this operator version yet, so no switch is
// programmed.
package switchfabric

import (
	"context"
	"errors"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/operator/api/v1alpha1"
)

// +kubebuilder:rbac:groups=distcache.io,resources=switchfabrics,verbs=list;watch
// +kubebuilder:rbac:groups=distcache.io,resources=switchfabrics/status,verbs=patch

// Reconciler reconciles SwitchFabrics.
type Reconciler struct {
	client.Client
}

// Reconcile fetches the fabric and patches its status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	f := &v1alpha1.SwitchFabric{}
	if err := r.Get(ctx, req.NamespacedName, f); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	base := f.DeepCopy()
	defer func() {
		f.Status.ObservedGeneration = f.Generation
		if err := r.Status().Patch(ctx, f, client.MergeFrom(base)); err != nil {
			retErr = errors.Join(retErr, fmt.Errorf("cannot patch status of SwitchFabric %s: %w", f.Name, client.IgnoreNotFound(err)))
		}
	}()
	f.Status.Switches = map[string]int32{}
	for _, s := range f.Spec.Switches {
		f.Status.Switches[string(s.Role)]++
	}
	msg := fmt.Sprintf("the %s driver is not part of this operator version: the spec is valid, no switch is programmed", f.Spec.Driver)
	for _, c := range []struct {
		t  v1alpha1.ConditionType
		ok bool
	}{{v1alpha1.ConditionReady, false}, {v1alpha1.ConditionProgressing, false}, {v1alpha1.ConditionDegraded, true}} {
		v1alpha1.SetCondition(&f.Status.Conditions, f.Generation, c.t, c.ok, v1alpha1.ReasonDriverUnavailable, msg)
	}
	return ctrl.Result{}, nil
}

// SetupWithManager registers the reconciler.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := ctrl.NewControllerManagedBy(mgr).For(&v1alpha1.SwitchFabric{}).Complete(r); err != nil {
		return fmt.Errorf("cannot set up the SwitchFabric controller: %w", err)
	}
	return nil
}
