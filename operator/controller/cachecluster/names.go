package cachecluster

import (
	"fmt"

	"github.com/distcache/distcache/operator/api/v1alpha1"
	"github.com/distcache/distcache/topology"
)

// Finalizer keeps a CacheCluster until its objects are deleted.
const Finalizer = "distcache.io/cleanup"

// Labels on every object the operator creates for a cluster.
const (
	LabelCluster   = "distcache.io/cluster"
	LabelComponent = "distcache.io/component"
	LabelLayer     = "distcache.io/layer"
	LabelRack      = "distcache.io/rack"
)

// Components.
const (
	ComponentCacheNode = "cache-node"
	ComponentStorage   = "storage"
	ComponentShim      = "shim"
)

// Data-plane ports.
const (
	NodePort    = 7100
	ShimPort    = 7000
	MetricsPort = 9100
	RedisPort   = 6379
)

// Where pods find the partition map.
const (
	MapKey       = "map.json"
	MapMountPath = "/etc/distcache"
)

// MapConfigMapName names the ConfigMap holding a cluster's partition map.
func MapConfigMapName(cluster string) string { return cluster + "-partition-map" }

func labels(cc *v1alpha1.CacheCluster, component string) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":       "distcache",
		"app.kubernetes.io/instance":   cc.Name,
		"app.kubernetes.io/component":  component,
		"app.kubernetes.io/managed-by": "distcache-operator",
		LabelCluster:                   cc.Name,
		LabelComponent:                 component,
	}
}

// dnsAddresser names pods by their headless Services' DNS names.
type dnsAddresser struct {
	t         *topology.Cluster
	namespace string
	shimHost  func(r, s int) string // the host of shard s of rack r's shim
}

func (a dnsAddresser) ShardAddress(r, s int) string {
	return fmt.Sprintf("%s:%d", a.shimHost(r, s), ShimPort)
}

func (a dnsAddresser) MemberAddress(layer string, i int) string {
	set := a.t.LayerSetName(layer)
	return fmt.Sprintf("%s-%d.%s.%s.svc:%d", set, i, set, a.namespace, NodePort)
}
