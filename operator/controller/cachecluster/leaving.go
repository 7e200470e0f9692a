package cachecluster

import (
	"fmt"
	"strings"
	"time"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/failover"
	"github.com/distcache/distcache/layout"
	"github.com/distcache/distcache/placement/partmap"
)

// A switch-backed layer whose SwitchFabric is being deleted or is gone
// leaves the partition map in two steps (package clusterresolve finds
// such layers, layout.Layer.Leaving). First its switches are fenced, all
// at once (failover.Observation.Departing): they serve no cached value,
// readers leave them and the shims stop waiting for them once they have
// been fenced for the serving lease. Once every one has been fenced for
// leavingFence, the next map leaves them out, and the shims stop sending
// them invalidations: by then none serves a hit. The SwitchFabric
// controller keeps programming them until then — it releases every
// cached key of a fenced switch — and removes its finalizer afterwards.

// leavingFence is how long a leaving layer's switches stay fenced in the
// published map before the map leaves them out: two serving leases and
// the map's delivery lag, as a draining cache node waits.
func leavingFence(spec *v1alpha1.CacheClusterSpec) time.Duration {
	return 2*layout.ServingLease(spec) + layout.APIMapDeliveryLag
}

// departing marks the observations of the leaving layers' members: each
// is fenced, not Ready since the status last recorded it Ready (or now).
func departing(s *state, obs map[string]failover.Observation, recorded map[string]v1alpha1.MemberStatus) {
	for _, l := range s.topo.Layers {
		if !l.Leaving {
			continue
		}
		for i := range l.Switches {
			name := partmap.MemberName(s.cc.Name, l.Name, i)
			o := notSeen(recorded[name], s.now)
			o.Departing = true
			obs[name] = o
		}
	}
}

// removeLeft drops the switches of every leaving layer that prev shows
// fenced, and the status not Ready, for leavingFence: this version of the
// map leaves them out. It schedules a reconcile for the others and
// returns the leaving layers' descriptions for the Degraded condition.
func removeLeft(s *state, prev *partmap.Map, recorded map[string]v1alpha1.MemberStatus) []string {
	fence := leavingFence(&s.cc.Spec)
	var notes []string
	for i := range s.topo.Layers {
		l := &s.topo.Layers[i]
		if !l.Leaving {
			continue
		}
		fabric := l.Spec.Switch.FabricRef
		if len(l.Switches) == 0 {
			notes = append(notes, fmt.Sprintf("layer %s: SwitchFabric %s does not exist or is being deleted; the layer has no member", l.Name, fabric))
			continue
		}
		left := fencedFor(prev, l.Name, recorded, s.now)
		if left >= fence {
			notes = append(notes, fmt.Sprintf("layer %s: SwitchFabric %s is gone or being deleted; its %d switches left the partition map", l.Name, fabric, len(l.Switches)))
			l.Switches = nil
			continue
		}
		s.recheckWithin(fence - left)
		notes = append(notes, fmt.Sprintf("layer %s: SwitchFabric %s is gone or being deleted; its %d switches are fenced and leave the partition map", l.Name, fabric, len(l.Switches)))
	}
	return notes
}

// fencedFor is how long every member of layer has been fenced or failed
// in prev and not Ready by the status: the shortest of them, 0 when one
// is not.
func fencedFor(prev *partmap.Map, layer string, recorded map[string]v1alpha1.MemberStatus, now time.Time) time.Duration {
	if prev == nil {
		return 0
	}
	for _, ml := range prev.Layers {
		if ml.Name != layer || len(ml.Members) == 0 {
			continue
		}
		least := time.Duration(-1)
		for _, mb := range ml.Members {
			r, ok := recorded[mb.Name]
			if mb.State == partmap.Active || !ok || r.Ready || r.Since == nil {
				return 0
			}
			if d := now.Sub(r.Since.Time); least < 0 || d < least {
				least = d
			}
		}
		return max(least, 0)
	}
	return 0
}

// recordedMembers are the members as the status last recorded them.
func recordedMembers(cc *v1alpha1.CacheCluster) map[string]v1alpha1.MemberStatus {
	out := map[string]v1alpha1.MemberStatus{}
	for _, l := range cc.Status.Layers {
		for _, m := range l.Members {
			out[m.Name] = m
		}
	}
	return out
}

// setLeavingCondition says not Ready and Degraded while a layer's fabric
// is missing or leaving: the cluster serves, without the layer.
func setLeavingCondition(cc *v1alpha1.CacheCluster, notes []string) {
	if len(notes) == 0 {
		return
	}
	msg := strings.Join(notes, "; ")
	setCondition(cc, v1alpha1.ConditionReady, false, v1alpha1.ReasonFabricNotFound, msg)
	setCondition(cc, v1alpha1.ConditionDegraded, true, v1alpha1.ReasonFabricNotFound, msg)
}

// leavingLayers names the layers whose fabric is leaving.
func leavingLayers(c *layout.Cluster) map[string]bool {
	out := map[string]bool{}
	for _, l := range c.Layers {
		if l.Leaving {
			out[l.Name] = true
		}
	}
	return out
}
