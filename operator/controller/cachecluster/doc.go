// Package cachecluster reconciles a CacheCluster into its running parts:
// the Redis backend (operator-managed StatefulSets of redis-server plus the
// storage shim, redis-operator Redis objects with the shim as a sidecar, or
// shim Deployments in front of external Redis endpoints), one StatefulSet
// and headless Service of cache nodes per software layer, and the partition
// map, published in a ConfigMap that every data-plane pod mounts and watches.
//
// The map is computed by package topology and partmap (spec → topology →
// partition map), never here. Failure handling follows DistCache §4.4 with
// the hysteresis of package failover: a member whose pod is not Ready for
// the grace period is marked Failed in the next map version (its ring
// points leave, so only its share of keys moves), and one Ready again for
// the hold-down gets its share back. Decisions depend only on pod readiness
// and its transition times, which the status records, so an operator
// restarted mid-remap reaches the same map.
package cachecluster
