package v1alpha1_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/distcache/distcache/api/v1alpha1"
)

// testNamespace holds every object the tests create.
const testNamespace = "default"

// nameSeq makes object names unique across the package's tests, which share
// one API server.
var nameSeq atomic.Int64

// uniqueName is a fresh object name that starts with prefix.
func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, nameSeq.Add(1))
}

// uniqueNameOfLength is a fresh object name of exactly n characters (n must
// leave room for prefix and a sequence number).
func uniqueNameOfLength(prefix string, n int) string {
	base := uniqueName(prefix)
	if len(base) > n {
		panic(fmt.Sprintf("name %q is longer than %d", base, n))
	}
	return base + strings.Repeat("x", n-len(base))
}

// clusterOption changes a CacheCluster built by newCluster.
type clusterOption func(*v1alpha1.CacheCluster)

// newCluster is a valid minimal CacheCluster with a unique name in
// testNamespace and one inline layer "spine" of 2 nodes, changed by opts in
// order.
func newCluster(opts ...clusterOption) *v1alpha1.CacheCluster {
	c := &v1alpha1.CacheCluster{
		ObjectMeta: metav1.ObjectMeta{Name: uniqueName("cc"), Namespace: testNamespace},
		Spec: v1alpha1.CacheClusterSpec{
			Layers: []v1alpha1.NamedLayer{newLayer("spine")},
		},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// withName names the cluster.
func withName(name string) clusterOption {
	return func(c *v1alpha1.CacheCluster) { c.Name = name }
}

// withStorage changes the cluster's storage spec.
func withStorage(f func(*v1alpha1.StorageSpec)) clusterOption {
	return func(c *v1alpha1.CacheCluster) { f(&c.Spec.Storage) }
}

// withLayers replaces the cluster's inline layers; with no layers the
// cluster has none.
func withLayers(layers ...v1alpha1.NamedLayer) clusterOption {
	return func(c *v1alpha1.CacheCluster) {
		if len(layers) == 0 {
			c.Spec.Layers = nil
			return
		}
		c.Spec.Layers = layers
	}
}

// withLayerRefs makes the cluster use the named CacheLayers instead of its
// inline layers (a later withLayers adds inline layers back).
func withLayerRefs(names ...string) clusterOption {
	return func(c *v1alpha1.CacheCluster) {
		c.Spec.Layers = nil
		c.Spec.LayerRefs = names
	}
}

// withRouting changes the cluster's routing spec.
func withRouting(f func(*v1alpha1.RoutingSpec)) clusterOption {
	return func(c *v1alpha1.CacheCluster) { f(&c.Spec.Routing) }
}

// withReplication enables the decision of copies of hot keys and changes
// its spec.
func withReplication(f func(*v1alpha1.HotKeyReplicationSpec)) clusterOption {
	return func(c *v1alpha1.CacheCluster) {
		r := &v1alpha1.HotKeyReplicationSpec{Enabled: true}
		f(r)
		c.Spec.HotKeys.Replication = r
	}
}

// withCacheBudget gives the cluster a cache budget of entries, split every
// interval ("" for the default).
func withCacheBudget(entries int64, interval string) clusterOption {
	return func(c *v1alpha1.CacheCluster) {
		c.Spec.CacheBudget = &v1alpha1.CacheBudgetSpec{Entries: entries}
		if interval != "" {
			c.Spec.CacheBudget.Interval = duration(interval)
		}
	}
}

// withCoherence changes the cluster's coherence spec.
func withCoherence(f func(*v1alpha1.CoherenceSpec)) clusterOption {
	return func(c *v1alpha1.CacheCluster) { f(&c.Spec.Coherence) }
}

// withFailover changes the cluster's failover spec.
func withFailover(f func(*v1alpha1.FailoverSpec)) clusterOption {
	return func(c *v1alpha1.CacheCluster) { f(&c.Spec.Failover) }
}

// withImages changes the cluster's images.
func withImages(f func(*v1alpha1.ImagesSpec)) clusterOption {
	return func(c *v1alpha1.CacheCluster) { f(&c.Spec.Images) }
}

// withGateway changes the cluster's gateway spec.
func withGateway(f func(*v1alpha1.GatewaySpec)) clusterOption {
	return func(c *v1alpha1.CacheCluster) { f(&c.Spec.Gateway) }
}

// withNetworkPolicy turns the cluster's NetworkPolicy on.
func withDataPlane(dp v1alpha1.DataPlaneSpec) clusterOption {
	return func(c *v1alpha1.CacheCluster) { c.Spec.DataPlane = &dp }
}

func withNetworkPolicy() clusterOption {
	return func(c *v1alpha1.CacheCluster) { c.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{Enabled: true} }
}

// daemonSetGateway makes the gateway a DaemonSet, on the node's network
// when hostNetwork.
func daemonSetGateway(hostNetwork bool) func(*v1alpha1.GatewaySpec) {
	return func(g *v1alpha1.GatewaySpec) { g.Mode, g.HostNetwork = v1alpha1.GatewayDaemonSet, hostNetwork }
}

// duration is a *metav1.Duration for a Go duration string; it panics on a
// malformed one (tests only pass literals).
func duration(s string) *metav1.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		panic(err)
	}
	return &metav1.Duration{Duration: d}
}

// layerOption changes the spec of a layer built by newLayer or
// newCacheLayer.
type layerOption func(*v1alpha1.CacheLayerSpec)

// newLayerSpec is a valid software layer spec of 2 nodes changed by opts.
func newLayerSpec(opts ...layerOption) v1alpha1.CacheLayerSpec {
	s := v1alpha1.CacheLayerSpec{Nodes: ptr.To[int32](2)}
	for _, o := range opts {
		o(&s)
	}
	return s
}

// newLayer is a valid inline layer named name: software, 2 nodes, changed
// by opts.
func newLayer(name string, opts ...layerOption) v1alpha1.NamedLayer {
	return v1alpha1.NamedLayer{Name: name, CacheLayerSpec: newLayerSpec(opts...)}
}

// newCacheLayer is a valid CacheLayer with a unique name in testNamespace:
// software, 2 nodes, changed by opts.
func newCacheLayer(opts ...layerOption) *v1alpha1.CacheLayer {
	return &v1alpha1.CacheLayer{
		ObjectMeta: metav1.ObjectMeta{Name: uniqueName("cl"), Namespace: testNamespace},
		Spec:       newLayerSpec(opts...),
	}
}

// withNodes sets the layer's node count.
func withNodes(n int32) layerOption {
	return func(s *v1alpha1.CacheLayerSpec) { s.Nodes = ptr.To(n) }
}

// withoutNodes leaves the layer's node count unset.
func withoutNodes() layerOption {
	return func(s *v1alpha1.CacheLayerSpec) { s.Nodes = nil }
}

// withBoundToRacks binds the layer to the storage racks and, as a bound
// layer must, leaves its node count unset (a later withNodes sets it again).
// withAutoCapacity sizes the layer from the cluster's cache budget.
func withAutoCapacity() layerOption {
	return func(s *v1alpha1.CacheLayerSpec) { s.Capacity.Auto = true }
}

func withBoundToRacks() layerOption {
	return func(s *v1alpha1.CacheLayerSpec) {
		s.BoundToRacks = true
		s.Nodes = nil
	}
}

// withHashSeed sets the layer's ring seed.
func withHashSeed(seed int64) layerOption {
	return func(s *v1alpha1.CacheLayerSpec) { s.HashSeed = ptr.To(seed) }
}

// withBackend sets the layer's backend only.
func withBackend(b v1alpha1.LayerBackend) layerOption {
	return func(s *v1alpha1.CacheLayerSpec) { s.Backend = b }
}

// withSwitch sets the layer's switch spec only.
func withSwitch(fabric string, role v1alpha1.SwitchRole) layerOption {
	return func(s *v1alpha1.CacheLayerSpec) {
		s.Switch = &v1alpha1.SwitchLayerSpec{FabricRef: fabric, Role: role}
	}
}

// withSwitchBackend makes the layer a valid switch-backed one: backend
// switch, served by the switches of fabric in role.
func withSwitchBackend(fabric string, role v1alpha1.SwitchRole) layerOption {
	return func(s *v1alpha1.CacheLayerSpec) {
		withBackend(v1alpha1.BackendSwitch)(s)
		withSwitch(fabric, role)(s)
	}
}

// fabricOption changes a SwitchFabric built by newFabric.
type fabricOption func(*v1alpha1.SwitchFabric)

// newSwitch is a switch with a P4Runtime address derived from its device id.
func newSwitch(name string, deviceID int64, role v1alpha1.SwitchRole) v1alpha1.Switch {
	return v1alpha1.Switch{
		Name:             name,
		DeviceID:         deviceID,
		Role:             role,
		P4RuntimeAddress: fmt.Sprintf("10.0.0.%d:9559", deviceID),
	}
}

// newFabric is a valid SwitchFabric with a unique name in testNamespace:
// driver stratum, pipeline distcache-v1model, a spine switch and a
// storage-leaf switch serving rack 0, changed by opts in order.
func newFabric(opts ...fabricOption) *v1alpha1.SwitchFabric {
	leaf := newSwitch("leaf-0", 2, v1alpha1.RoleStorageLeaf)
	leaf.Rack = ptr.To[int32](0)
	f := &v1alpha1.SwitchFabric{
		ObjectMeta: metav1.ObjectMeta{Name: uniqueName("sf"), Namespace: testNamespace},
		Spec: v1alpha1.SwitchFabricSpec{
			Driver:   v1alpha1.DriverStratum,
			Pipeline: "distcache-v1model",
			Switches: []v1alpha1.Switch{newSwitch("spine-0", 1, v1alpha1.RoleSpine), leaf},
		},
	}
	for _, o := range opts {
		o(f)
	}
	return f
}

// withDriver sets the fabric's driver only.
func withDriver(d v1alpha1.FabricDriver) fabricOption {
	return func(f *v1alpha1.SwitchFabric) { f.Spec.Driver = d }
}

// withONOS sets the fabric's ONOS controller only.
func withONOS(endpoint string) fabricOption {
	return func(f *v1alpha1.SwitchFabric) { f.Spec.ONOS = &v1alpha1.ONOSSpec{Endpoint: endpoint} }
}

// withSwitches replaces the fabric's switches.
func withSwitches(switches ...v1alpha1.Switch) fabricOption {
	return func(f *v1alpha1.SwitchFabric) { f.Spec.Switches = switches }
}

// withSwitchEdit changes switch i of the fabric.
func withSwitchEdit(i int, edit func(*v1alpha1.Switch)) fabricOption {
	return func(f *v1alpha1.SwitchFabric) { edit(&f.Spec.Switches[i]) }
}
