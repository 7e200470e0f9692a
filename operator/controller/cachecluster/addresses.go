package cachecluster

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/layout"
	"github.com/distcache/distcache/placement/partmap"
)

// The addresses the partition map gives data-plane peers.
//
// The pods the operator runs (cache nodes, and managed storage shards) are
// named by their pod IP: a pod that comes back with a new IP is a new
// address in the map, which every process learns from the map's watch
// within milliseconds, and no data-plane process asks DNS for anything.
// Naming them by DNS instead made every process resolve every peer once a
// second to notice new IPs: on a real node with the sample cluster, CoreDNS
// took 17 % of a core with the cluster idle (docs/localkube.md). A pod
// that has no IP yet (just recreated) keeps the address the previous map
// gave it; one that never had one has none. A member without an address
// runs no process anyone could reach, and gets nothing to cache: a shim
// fills only the nodes it knows by address (FETCH from a serving owner).
// Shards the operator does not run keep DNS names: the redis-operator's
// pods under their headless Service, an external shard's shim Service.

// addresser is the map's addresser for the reconcile s, whose published
// map was prev (nil: none), publishing the members' domains d
// (domains.go).
func (r *Reconciler) addresser(s *state, prev *partmap.Map, d memberDomains) partmap.Addresser {
	return podAddresser{t: s.topo, namespace: s.cc.Namespace, mode: s.cc.Spec.Storage.Mode, pods: s.pods, prev: prev, domains: d}
}

// podAddresser names the operator's pods by IP (see above).
type podAddresser struct {
	t         *layout.Cluster
	namespace string
	mode      v1alpha1.StorageMode
	pods      map[string]*corev1.Pod // the cluster's pods by name
	prev      *partmap.Map
	domains   memberDomains
}

// ShardAddress is the shim of shard s of rack r: the pod of the rack's
// StatefulSet (managed), the redis-operator's pod behind its headless
// Service (redisOperator), or the shim Deployment's Service (external).
func (a podAddresser) ShardAddress(r, s int) string {
	shard := a.t.ShardName(r, s)
	switch a.mode {
	case v1alpha1.StorageRedisOperator:
		return fmt.Sprintf("%s-0.%s-headless.%s.svc:%d", shard, shard, a.namespace, ShimPort)
	case v1alpha1.StorageExternal:
		return fmt.Sprintf("%s.%s.svc:%d", shard, a.namespace, ShimPort)
	}
	return a.shardPodAddress(r, s, ShimPort, func(sh partmap.Shard) string { return sh.Address })
}

// shardPodAddress is port at the IP of managed shard s of rack r's pod,
// or, while the pod has none, what previous (of the previous map's
// shard) says; "" without either.
func (a podAddresser) shardPodAddress(r, s, port int, previous func(partmap.Shard) string) string {
	shard := a.t.ShardName(r, s)
	if ip, ok := podIP(a.pods[shard]); ok {
		return net.JoinHostPort(ip.String(), strconv.Itoa(port))
	}
	if a.prev != nil && r < len(a.prev.Storage.Racks) && s < len(a.prev.Storage.Racks[r].Shards) {
		if sh := a.prev.Storage.Racks[r].Shards[s]; sh.Name == shard {
			return previous(sh)
		}
	}
	return ""
}

// RedisAddress is the Redis of shard s of rack r, which clients and
// gateways read and write directly with spec.dataPlane.directReads: the
// shard pod's IP (managed), or its DNS name under the rack's headless
// Service where Redis serves TLS, so that the name the certificate
// carries is the one dialled; the redis-operator's pod (redisOperator);
// the endpoint itself (external).
func (a podAddresser) RedisAddress(r, s int) string {
	st := &a.t.Spec.Storage
	shard := a.t.ShardName(r, s)
	switch a.mode {
	case v1alpha1.StorageRedisOperator:
		return fmt.Sprintf("%s-0.%s-headless.%s.svc:%d", shard, shard, a.namespace, RedisPort)
	case v1alpha1.StorageExternal:
		if i := r*a.t.ShardsPerRack() + s; i < len(st.External) {
			return st.External[i]
		}
		return ""
	}
	if st.TLS != nil {
		return fmt.Sprintf("%s.%s.%s.svc:%d", shard, a.t.RackName(r), a.namespace, RedisPort)
	}
	return a.shardPodAddress(r, s, RedisPort, func(sh partmap.Shard) string { return sh.Redis })
}

// MemberAddress is the cache node of member i of layer: its pod's IP.
func (a podAddresser) MemberAddress(layer string, i int) string {
	name := memberPodName(a.t, layer, i)
	if ip, ok := podIP(a.pods[name]); ok {
		return net.JoinHostPort(ip.String(), strconv.Itoa(NodePort))
	}
	if a.prev != nil {
		if l, m, ok := a.prev.Member(name); ok && a.prev.Layers[l].Name == layer {
			return a.prev.Layers[l].Members[m].Address
		}
	}
	return ""
}

// podIP is pod's IP, its IPv4 one on a dual-stack network (the data
// plane's transport prefers IPv4, as peers.ResolveAddr does).
func podIP(pod *corev1.Pod) (netip.Addr, bool) {
	if pod == nil {
		return netip.Addr{}, false
	}
	var first netip.Addr
	for _, p := range append([]corev1.PodIP{{IP: pod.Status.PodIP}}, pod.Status.PodIPs...) {
		ip, err := netip.ParseAddr(p.IP)
		if err != nil {
			continue
		}
		if ip.Unmap().Is4() {
			return ip.Unmap(), true
		}
		if !first.IsValid() {
			first = ip
		}
	}
	return first, first.IsValid()
}
