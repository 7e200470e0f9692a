package cachecluster

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/distcache/distcache/layout"
	"github.com/distcache/distcache/placement/partmap"
)

// Failure domains in the partition map.
//
// Each member of a software layer is published with the Kubernetes node
// its pod runs on (Member.Host) and that node's zone (Member.Zone, the
// node's topology.kubernetes.io/zone label), so that the map places a
// key's candidates on distinct nodes and zones (package partmap, failure
// domains) and a gateway prefers the candidate in its own zone. A member
// whose pod is not scheduled (just recreated) keeps the previous map's
// domains, as it keeps its address.
//
// A reader older than these fields rejects a map that has them, so the
// operator publishes them only once every data-plane pod of the cluster
// runs its own release's image, or when the published map has them
// already (every later release knows them).

// +kubebuilder:rbac:groups="",resources=nodes,verbs=list;watch

// LabelZone is the well-known label of a node's zone.
const LabelZone = "topology.kubernetes.io/zone"

// NodeZones tells the zone of a Kubernetes node.
type NodeZones interface {
	// Zone is node's LabelZone label, "" when it has none.
	Zone(ctx context.Context, node string) (string, error)
}

// memberDomains is what a reconcile publishes of the members' domains.
type memberDomains struct {
	on    bool              // publish hosts and zones
	zones map[string]string // node name → zone
}

// domains decides whether the reconcile s publishes domains with the map
// after prev (nil: none), and finds the zones of the nodes the members'
// pods run on (none without Reconciler.Nodes). A node whose zone cannot be
// read keeps the zone prev gives it.
func (r *Reconciler) domains(ctx context.Context, s *state, prev *partmap.Map) memberDomains {
	d := memberDomains{on: hasDomains(prev) || r.dataPlaneOnRelease(s), zones: map[string]string{}}
	if !d.on || r.Nodes == nil {
		return d
	}
	for _, p := range s.pods {
		node := p.Spec.NodeName
		if node == "" || !live(p) {
			continue
		}
		if _, seen := d.zones[node]; seen {
			continue
		}
		zone, err := r.Nodes.Zone(ctx, node)
		if err != nil {
			log.FromContext(ctx).Error(err, "cannot read the zone of a node; keeping the published one", "node", node)
			if prev != nil {
				zone, _ = prev.HostZone(node)
			}
		}
		d.zones[node] = zone
	}
	return d
}

// dataPlaneOnRelease reports whether every live pod of s runs the
// operator's own data-plane image in each container but Redis's, and
// there is one.
func (r *Reconciler) dataPlaneOnRelease(s *state) bool {
	all, seen := r.podsOnRelease(s)
	return all && seen
}

// podsOnRelease reports whether every live pod of s runs the operator's
// own data-plane image in each container but Redis's, and whether a
// live pod has such a container.
func (r *Reconciler) podsOnRelease(s *state) (all, seen bool) {
	image := r.releaseImage()
	for _, p := range s.pods {
		if !live(p) {
			continue
		}
		for _, c := range p.Spec.Containers {
			if c.Name == "redis" {
				continue
			}
			if c.Image != image {
				return false, seen
			}
			seen = true
		}
	}
	return true, seen
}

// hasDomains reports whether a member of m has a host or zone.
func hasDomains(m *partmap.Map) bool {
	if m == nil {
		return false
	}
	for _, l := range m.Layers {
		for _, mb := range l.Members {
			if mb.Host != "" || mb.Zone != "" {
				return true
			}
		}
	}
	return false
}

// memberPodName is the name of the pod of member i of layer.
func memberPodName(t *layout.Cluster, layer string, i int) string {
	return fmt.Sprintf("%s-%d", t.LayerSetName(layer), i)
}

// MemberDomain is the node of member i of layer's pod and its zone, or
// the previous map's while the pod is not scheduled; none while the
// reconcile does not publish domains.
func (a podAddresser) MemberDomain(layer string, i int) (zone, host string) {
	if !a.domains.on {
		return "", ""
	}
	name := memberPodName(a.t, layer, i)
	if p := a.pods[name]; live(p) && p.Spec.NodeName != "" {
		return a.domains.zones[p.Spec.NodeName], p.Spec.NodeName
	}
	if a.prev != nil {
		if l, m, ok := a.prev.Member(name); ok && a.prev.Layers[l].Name == layer {
			mb := a.prev.Layers[l].Members[m]
			return mb.Zone, mb.Host
		}
	}
	return "", ""
}
