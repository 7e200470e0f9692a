package topology

import (
	"errors"
	"fmt"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/placement/partmap"
)

// ErrLayerNotFound is wrapped by ResolveLayers for a layerRef that names no
// CacheLayer.
var ErrLayerNotFound = errors.New("cache layer not found")

// Layer is one resolved cache layer of a cluster.
type Layer struct {
	Name string
	Spec v1alpha1.CacheLayerSpec
	// Switches are a switch-backed layer's members, in member order (by
	// rack for a layer bound to racks), once ResolveSwitches found them;
	// Driver is their fabric's driver.
	Switches []v1alpha1.Switch
	Driver   v1alpha1.FabricDriver
}

// Software says whether the layer is served by cache-node pods.
func (l Layer) Software() bool { return l.Spec.Backend != v1alpha1.BackendSwitch }

// LayerGetter looks up a CacheLayer's spec by name.
type LayerGetter func(name string) (*v1alpha1.CacheLayerSpec, bool)

// ResolveLayers returns the cluster's layers in order: the inline ones, or
// those its layerRefs name, looked up with get.
func ResolveLayers(spec *v1alpha1.CacheClusterSpec, get LayerGetter) ([]Layer, error) {
	if len(spec.Layers) > 0 {
		out := make([]Layer, len(spec.Layers))
		for i, l := range spec.Layers {
			out[i] = Layer{Name: l.Name, Spec: l.CacheLayerSpec}
		}
		return out, nil
	}
	out := make([]Layer, 0, len(spec.LayerRefs))
	for _, name := range spec.LayerRefs {
		ls, ok := get(name)
		if !ok {
			return nil, fmt.Errorf("cannot resolve layer %q: %w", name, ErrLayerNotFound)
		}
		out = append(out, Layer{Name: name, Spec: *ls})
	}
	return out, nil
}

// Cluster is the desired shape of a cache cluster.
type Cluster struct {
	// Name is the CacheCluster's name; it prefixes every member and shard.
	Name string
	// Spec is the cluster's spec.
	Spec v1alpha1.CacheClusterSpec
	// Layers are every layer, upper first, switch-backed ones included.
	Layers []Layer
}

// New checks that the layers can form a cluster.
func New(name string, spec v1alpha1.CacheClusterSpec, layers []Layer) (*Cluster, error) {
	c := &Cluster{Name: name, Spec: spec, Layers: layers}
	if spec.DataPlane != nil && spec.DataPlane.Bundles {
		for _, l := range layers {
			if !l.Software() {
				return nil, fmt.Errorf("cannot lay out cache cluster %s: spec.dataPlane.bundles with switch-backed layer %s: a switch parses one message per datagram, not bundles", name, l.Name)
			}
		}
	}
	if _, err := partmap.Build(c.MapSpec(nil), nil); err != nil {
		return nil, fmt.Errorf("cannot lay out cache cluster %s: %w", name, err)
	}
	return c, nil
}

// Racks is the number of storage racks.
func (c *Cluster) Racks() int { return int(max(c.Spec.Storage.Racks, 1)) }

// ShardsPerRack is the number of Redis shards per rack.
func (c *Cluster) ShardsPerRack() int { return int(max(c.Spec.Storage.ShardsPerRack, 1)) }

// SoftwareLayers are the layers served by cache-node pods, upper first.
func (c *Cluster) SoftwareLayers() []Layer {
	var out []Layer
	for _, l := range c.Layers {
		if l.Software() {
			out = append(out, l)
		}
	}
	return out
}

// Nodes is the member count of layer l.
func (c *Cluster) Nodes(l Layer) int {
	if !l.Software() {
		return len(l.Switches)
	}
	if l.Spec.BoundToRacks {
		return c.Racks()
	}
	if l.Spec.Nodes == nil {
		return 0
	}
	return int(*l.Spec.Nodes)
}

// MapSpec is the partmap.Spec of the cluster's software layers and of
// its switch-backed layers whose switches are resolved (ResolveSwitches),
// with addresses from a (nil leaves the software members' to the previous
// map; switches' are their DataAddress).
func (c *Cluster) MapSpec(a partmap.Addresser) partmap.Spec {
	s := partmap.Spec{
		Cluster:       c.Name,
		Racks:         c.Racks(),
		ShardsPerRack: c.ShardsPerRack(),
		Addresses:     a,
		DirectReads:   c.Spec.DataPlane != nil && c.Spec.DataPlane.DirectReads,
		DirectWrites:  c.Spec.DataPlane != nil && c.Spec.DataPlane.DirectWrites,
	}
	for _, l := range c.Layers {
		if len(l.Switches) > 0 {
			s.Addresses = switchAddresser{a, c.Layers}
			break
		}
	}
	for _, l := range c.Layers {
		if !l.Software() && len(l.Switches) == 0 {
			continue
		}
		ls := partmap.LayerSpec{
			Name:         l.Name,
			Nodes:        c.Nodes(l),
			VirtualNodes: int(l.Spec.VirtualNodes),
			BoundToRacks: l.Spec.BoundToRacks,
			Switch:       !l.Software(),
		}
		if l.Spec.HashSeed != nil {
			ls.Seed = uint64(*l.Spec.HashSeed)
		}
		s.Layers = append(s.Layers, ls)
	}
	return s
}

// Map builds the partition map from prev (nil for the first version): see
// partmap.Build for what it keeps.
func (c *Cluster) Map(prev *partmap.Map, a partmap.Addresser) (*partmap.Map, error) {
	m, err := partmap.Build(c.MapSpec(a), prev)
	if err != nil {
		return nil, fmt.Errorf("cannot build the partition map of %s: %w", c.Name, err)
	}
	return m, nil
}

// ShardName is the name of shard s of rack r: the pod name of ordinal s of
// the rack's storage StatefulSet.
func (c *Cluster) ShardName(r, s int) string { return partmap.ShardName(c.Name, r, s) }

// RackName is the name of the storage set of rack r: shard names are it
// followed by "-" and the shard's ordinal.
func (c *Cluster) RackName(r int) string { return fmt.Sprintf("%s-rack-%d", c.Name, r) }

// LayerSetName is the name of layer l's set of cache nodes: member names are
// it followed by "-" and the member's ordinal.
func (c *Cluster) LayerSetName(layer string) string { return c.Name + "-" + layer }
