package layout

import (
	"errors"
	"fmt"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/topology"
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
	// Driver and PipelineSource are their fabric's.
	Switches       []v1alpha1.Switch
	Driver         v1alpha1.FabricDriver
	PipelineSource *v1alpha1.PipelineSource
	// Leaving says the switch-backed layer's fabric is being deleted or
	// is gone (Fabric.Leaving): its switches, if any are left, are to be
	// fenced and then removed from the map.
	Leaving bool
	// ClientLeaves are the client-leaf switches of a switch-backed
	// layer's fabric (Cluster.ClientLeaves).
	ClientLeaves []v1alpha1.Switch
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

// Shape is the cluster as the core sees it: racks, shards and layers
// without the API's types. Switch-backed layers carry their switches'
// data addresses once ResolveSwitches found them.
func (c *Cluster) Shape() topology.Shape {
	s := topology.Shape{
		Cluster:       c.Name,
		Racks:         c.Racks(),
		ShardsPerRack: c.ShardsPerRack(),
		DirectReads:   c.Spec.DataPlane != nil && c.Spec.DataPlane.DirectReads,
		DirectWrites:  c.Spec.DataPlane != nil && c.Spec.DataPlane.DirectWrites,
		HashTags:      c.Spec.Storage.HashTags,
	}
	for _, l := range c.Layers {
		tl := topology.Layer{
			Name:         l.Name,
			Members:      c.Nodes(l),
			VirtualNodes: int(l.Spec.VirtualNodes),
			BoundToRacks: l.Spec.BoundToRacks,
			Switch:       !l.Software(),
		}
		if l.Spec.HashSeed != nil {
			tl.Seed = uint64(*l.Spec.HashSeed)
		}
		for _, sw := range l.Switches {
			tl.SwitchAddresses = append(tl.SwitchAddresses, sw.DataAddress)
		}
		s.Layers = append(s.Layers, tl)
	}
	return s
}

// MapSpec is the partmap.Spec of the cluster's shape (topology.Shape.MapSpec).
func (c *Cluster) MapSpec(a partmap.Addresser) partmap.Spec { return c.Shape().MapSpec(a) }

// Map builds the partition map from prev (nil for the first version): see
// partmap.Build for what it keeps.
func (c *Cluster) Map(prev *partmap.Map, a partmap.Addresser) (*partmap.Map, error) {
	return c.Shape().Map(prev, a)
}

// ShardName is the name of shard s of rack r (topology.ShardName).
func (c *Cluster) ShardName(r, s int) string { return topology.ShardName(c.Name, r, s) }

// RackName is the name of the storage set of rack r (topology.RackName).
func (c *Cluster) RackName(r int) string { return topology.RackName(c.Name, r) }

// LayerSetName is the name of layer's set of cache nodes
// (topology.LayerSetName).
func (c *Cluster) LayerSetName(layer string) string { return topology.LayerSetName(c.Name, layer) }
