package cachecluster

import (
	"context"
	"net/netip"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/failover"
	"github.com/distcache/distcache/operator/clusterresolve"
	"github.com/distcache/distcache/operator/enqueue"
)

// switchObservations are the switch members' readiness, from their
// fabrics' statuses (package switchfabric runs the sessions): Ready while
// the operator programs the switch (a primary session that pushed the
// pipeline), as a cache node's pod is while it serves. A switch counts
// only while its fabric reports it bound to this cluster.
func switchObservations(c *clusterresolve.Cluster, now time.Time) map[string]failover.Observation {
	out := map[string]failover.Observation{}
	for _, sm := range c.SwitchMembers() {
		f := c.Fabrics[sm.Fabric]
		if f == nil || f.Status.Cluster != c.Name {
			continue
		}
		for _, ss := range f.Status.SwitchStatuses {
			if ss.Name != sm.Switch.Name || ss.Member != sm.Member {
				continue
			}
			o := failover.Observation{Ready: ss.Programmed, Since: now}
			if ss.Since != nil {
				o.Since = ss.Since.Time
			}
			out[sm.Member] = o
		}
	}
	return out
}

// switchPeers are the switches of the cluster's switch-backed layers as
// NetworkPolicy peers: a switch relays its read misses to the shims and
// answers coherence messages from its own address.
func switchPeers(s *state) []networkingv1.NetworkPolicyPeer {
	var out []networkingv1.NetworkPolicyPeer
	seen := map[netip.Addr]bool{}
	for _, sm := range s.topo.SwitchMembers() {
		ap, err := netip.ParseAddrPort(sm.Switch.DataAddress)
		if err != nil || seen[ap.Addr()] {
			continue
		}
		seen[ap.Addr()] = true
		out = append(out, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: netip.PrefixFrom(ap.Addr(), ap.Addr().BitLen()).String()}})
	}
	return out
}

// clustersOfFabric enqueues, for a SwitchFabric that changed, the cluster
// its status says it is bound to — whose switch members' sessions it
// reports — or, while it is bound to none, every cluster of its
// namespace: any may lay a switch-backed layer out on it.
func (r *Reconciler) clustersOfFabric() handler.EventHandler {
	all := enqueue.AllInNamespace(r.Client, func() client.ObjectList { return &v1alpha1.CacheClusterList{} })
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc:  all.Create,
		DeleteFunc:  all.Delete,
		GenericFunc: all.Generic,
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() {
				all.Update(ctx, e, q)
				return
			}
			for _, o := range []client.Object{e.ObjectOld, e.ObjectNew} {
				if cluster := o.(*v1alpha1.SwitchFabric).Status.Cluster; cluster != "" {
					q.Add(reconcile.Request{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: cluster}})
				}
			}
		},
	}
}
