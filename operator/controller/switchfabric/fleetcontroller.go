package switchfabric

import (
	"context"
	"hash/fnv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/api/v1alpha1"
)

// reconcileFleet keeps this replica's fleet of a fabric running what the
// fabric's binding asks, and stops it when the fabric is gone or
// blocked: a switch whose fleets all stop keeps no lease and serves
// nothing cached. It runs on every replica and writes nothing to the API.
func (r *Reconciler) reconcileFleet(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	f := &v1alpha1.SwitchFabric{}
	if err := r.Get(ctx, req.NamespacedName, f); err != nil {
		if apierrors.IsNotFound(err) {
			r.fleets.stop(req.NamespacedName)
			r.configMaps.stop(req.NamespacedName)
			r.images.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s := &state{f: f}
	res, err := r.resolve(ctx, s)
	switch {
	case s.blocked != nil:
		r.fleets.stop(req.NamespacedName)
		return res, nil
	case err != nil || !res.IsZero():
		return res, err // the fleet, if one runs, goes on
	}
	if s.run, err = r.fleets.ensure(req.NamespacedName, s.binding, r.start); err != nil {
		return ctrl.Result{}, err
	}
	r.upgrade(ctx, s) // a new build of the same P4Info, read by resolve
	// Secrets are not watched: a rotated TLS Secret is taken up here.
	return ctrl.Result{RequeueAfter: statusRefresh}, nil
}

// ElectionIDOf is the low 64 bits of a replica's P4Runtime election ids:
// the operator's election id (1 when 0) in the high 32 bits and a 32-bit
// FNV-1a hash of the replica's name (its pod's) in the low 32, so that
// replicas differ. The high 64 bits are the switch's to order claims by
// (package fabric/stratum).
func ElectionIDOf(operator uint64, replica string) uint64 {
	h := fnv.New32a()
	h.Write([]byte(replica))
	return max(operator, 1)<<32 | uint64(h.Sum32())
}

// fleetsStopper stops every fleet of the replica when its manager stops;
// it runs on every replica, leader or not.
type fleetsStopper struct{ fs *fleets }

func (s fleetsStopper) Start(ctx context.Context) error {
	<-ctx.Done()
	s.fs.stopAll()
	return nil
}

func (fleetsStopper) NeedLeaderElection() bool { return false }
