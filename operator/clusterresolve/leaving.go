package clusterresolve

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/layout"
	"github.com/distcache/distcache/placement/partmap"
)

// publishedMap reads cc's published partition map; nil when there is none
// or it cannot be decoded (the CacheCluster controller then publishes a
// fresh one).
func publishedMap(ctx context.Context, c client.Reader, cc *v1alpha1.CacheCluster) (*partmap.Map, error) {
	cm := &corev1.ConfigMap{}
	err := c.Get(ctx, client.ObjectKey{Namespace: cc.Namespace, Name: MapConfigMapName(cc.Name)}, cm)
	if err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, nil
		}
		return nil, fmt.Errorf("cannot get the partition map of %s: %w", cc.Name, err)
	}
	m, err := partmap.Decode([]byte(cm.Data[MapKey]))
	if err != nil {
		return nil, nil //nolint:nilerr // unreadable: nothing of it is kept
	}
	return m, nil
}

// leftInMap finds what the published map still holds of a leaving
// fabric's switch-backed layers.
type leftInMap struct {
	cluster *v1alpha1.CacheCluster
	m       *partmap.Map // nil: none published
	layers  layout.LayerGetter
}

// members returns the map's members of the cluster's layers that use
// fabric, by role.
func (l *leftInMap) members(fabric string) map[v1alpha1.SwitchRole][]partmap.Member {
	out := map[v1alpha1.SwitchRole][]partmap.Member{}
	if l.m == nil {
		return out
	}
	layers, err := layout.ResolveLayers(&l.cluster.Spec, l.layers)
	if err != nil {
		return out // layout.Resolve reports it
	}
	for _, ly := range layers {
		if ly.Software() || ly.Spec.Switch == nil || ly.Spec.Switch.FabricRef != fabric {
			continue
		}
		for _, ml := range l.m.Layers {
			if ml.Name == ly.Name && ml.Switch && len(ml.Members) > 0 {
				out[ly.Spec.Switch.Role] = ml.Members
			}
		}
	}
	return out
}

// filter returns spec with only the switches of the roles whose layers
// the map still holds.
func (l *leftInMap) filter(fabric string, spec *v1alpha1.SwitchFabricSpec) *v1alpha1.SwitchFabricSpec {
	held := l.members(fabric)
	out := spec.DeepCopy()
	out.Switches = nil
	for _, s := range spec.Switches {
		if len(held[s.Role]) > 0 {
			out.Switches = append(out.Switches, s)
		}
	}
	return out
}

// switches returns the spec of a gone fabric as the map still holds it:
// a switch per member, named after it, at its address and rack.
func (l *leftInMap) switches(fabric string) *v1alpha1.SwitchFabricSpec {
	held := l.members(fabric)
	if len(held) == 0 {
		return nil
	}
	spec := &v1alpha1.SwitchFabricSpec{Driver: v1alpha1.DriverStratum}
	for role, members := range held {
		for _, mb := range members {
			s := v1alpha1.Switch{Name: mb.Name, DeviceID: int64(len(spec.Switches) + 1), Role: role, DataAddress: mb.Address}
			if mb.Rack != "" {
				for r := range len(l.m.Storage.Racks) {
					if partmap.RackName(r) == mb.Rack {
						s.Rack = ptr.To(int32(r))
					}
				}
			}
			spec.Switches = append(spec.Switches, s)
		}
	}
	return spec
}
