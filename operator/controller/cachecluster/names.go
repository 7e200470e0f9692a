package cachecluster

import (
	"github.com/distcache/distcache/api/v1alpha1"
)

// Finalizer keeps a CacheCluster until its objects are deleted.
const Finalizer = "distcache.io/cleanup"

// Labels on every object the operator creates for a cluster.
const (
	LabelCluster   = "distcache.io/cluster"
	LabelComponent = "distcache.io/component"
	LabelLayer     = "distcache.io/layer"
	LabelRack      = "distcache.io/rack"
	// LabelShard names the storage shard of an external shard's shim.
	LabelShard = "distcache.io/shard"
)

// Components.
const (
	ComponentCacheNode = "cache-node"
	ComponentStorage   = "storage"
	ComponentShim      = "shim"
	ComponentGateway   = "gateway"
)

// Data-plane ports.
const (
	NodePort    = 7100
	ShimPort    = 7000
	MetricsPort = 9100
	RedisPort   = 6379
	// GatewayPort is the gateway container's Redis port (the Service's
	// port is spec.gateway.port).
	GatewayPort = 6379
)

// Where a managed Redis keeps its append-only file: the volume mounted at
// RedisDataPath, a PersistentVolumeClaim with storage.persistence, else an
// emptyDir.
const (
	RedisDataVolume = "data"
	RedisDataPath   = "/data"
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
