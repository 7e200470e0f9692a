package cachecluster

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/distcache/distcache/api/v1alpha1"
)

// gatewayObservation is the gateway's workload as reconcileGateway left
// it: what GatewayReady and status.gateway report.
type gatewayObservation struct {
	disabled bool // spec.gateway.replicas 0: no gateway runs
	mode     v1alpha1.GatewayMode
	// desired pods: the Deployment's replicas, or the nodes that should run
	// a DaemonSet pod; ready of them are Ready.
	desired, ready int32
	// observed: the workload's controller has acted on its latest spec.
	observed bool
	// updated pods run the latest pod template; current: all pods do, and
	// no other pod is left (a rollout is complete).
	updated int32
	current bool
}

// observeDeployment reads the gateway Deployment's status.
func observeDeployment(dep *appsv1.Deployment) *gatewayObservation {
	desired := int32(1)
	if dep.Spec.Replicas != nil {
		desired = *dep.Spec.Replicas
	}
	st := dep.Status
	return &gatewayObservation{
		mode: v1alpha1.GatewayDeployment, desired: desired, ready: st.ReadyReplicas,
		observed: dep.Generation > 0 && st.ObservedGeneration >= dep.Generation,
		updated:  st.UpdatedReplicas, current: st.UpdatedReplicas == desired && st.Replicas == desired,
	}
}

// observeDaemonSet reads the gateway DaemonSet's status.
func observeDaemonSet(ds *appsv1.DaemonSet) *gatewayObservation {
	st := ds.Status
	return &gatewayObservation{
		mode: v1alpha1.GatewayDaemonSet, desired: st.DesiredNumberScheduled, ready: st.NumberReady,
		observed: ds.Generation > 0 && st.ObservedGeneration >= ds.Generation,
		updated:  st.UpdatedNumberScheduled, current: st.UpdatedNumberScheduled == st.DesiredNumberScheduled,
	}
}

// setGatewayStatus sets status.gateway and GatewayReady from what
// reconcileGateway observed (v1alpha1.ConditionGatewayReady); both are
// removed while no gateway runs, and kept as they are when the reconcile
// stopped before the gateway (o nil).
func setGatewayStatus(cc *v1alpha1.CacheCluster, o *gatewayObservation) {
	switch {
	case o == nil:
		return
	case o.disabled:
		cc.Status.Gateway = nil
		meta.RemoveStatusCondition(&cc.Status.Conditions, string(v1alpha1.ConditionGatewayReady))
		return
	}
	cc.Status.Gateway = &v1alpha1.GatewayStatus{
		Mode: o.mode, DesiredReplicas: o.desired, ReadyReplicas: o.ready, Endpoint: GatewayEndpoint(cc),
	}
	workload := fmt.Sprintf("%s %s", o.mode, GatewayName(cc.Name))
	ready := fmt.Sprintf("%d of %d gateway pods ready", o.ready, o.desired)
	switch {
	case !o.observed:
		setCondition(cc, v1alpha1.ConditionGatewayReady, false, v1alpha1.ReasonCreating,
			fmt.Sprintf("%s: waiting for its controller to act on the latest spec; %s", workload, ready))
	case o.mode == v1alpha1.GatewayDaemonSet && o.desired == 0:
		setCondition(cc, v1alpha1.ConditionGatewayReady, false, v1alpha1.ReasonPodsNotReady,
			fmt.Sprintf("%s: no node runs a gateway pod (none is schedulable for it)", workload))
	case !o.current:
		setCondition(cc, v1alpha1.ConditionGatewayReady, false, v1alpha1.ReasonCreating,
			fmt.Sprintf("%s: rolling out, %d of %d gateway pods updated, %d ready", workload, o.updated, o.desired, o.ready))
	case o.ready < o.desired:
		setCondition(cc, v1alpha1.ConditionGatewayReady, false, v1alpha1.ReasonPodsNotReady, fmt.Sprintf("%s: %s", workload, ready))
	default:
		setCondition(cc, v1alpha1.ConditionGatewayReady, true, v1alpha1.ReasonReconciled,
			fmt.Sprintf("%s: %s, serving at %s", workload, ready, GatewayEndpoint(cc)))
	}
}
