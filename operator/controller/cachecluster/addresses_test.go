package cachecluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/layout"
	"github.com/distcache/distcache/placement/partmap"
)

func TestPodAddresser(t *testing.T) {
	spec := v1alpha1.CacheClusterSpec{
		Storage: v1alpha1.StorageSpec{Mode: v1alpha1.StorageManaged, Racks: 1, ShardsPerRack: 2},
		Layers:  []v1alpha1.NamedLayer{{Name: "spine", CacheLayerSpec: v1alpha1.CacheLayerSpec{Nodes: ptr.To[int32](2), VirtualNodes: 16}}},
	}
	topo, err := layout.New("shop", spec, []layout.Layer{{Name: "spine", Spec: spec.Layers[0].CacheLayerSpec}})
	if err != nil {
		t.Fatal(err)
	}
	pod := func(name string, ips ...string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for i, ip := range ips {
			if i == 0 {
				p.Status.PodIP = ip
			}
			p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: ip})
		}
		return p
	}
	pods := map[string]*corev1.Pod{
		"shop-spine-0":  pod("shop-spine-0", "198.18.0.3"),
		"shop-spine-1":  pod("shop-spine-1"), // created, no IP yet
		"shop-rack-0-0": pod("shop-rack-0-0", "2001:db8::7", "198.18.0.7"),
	}
	prev, err := topo.Map(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	prev.Layers[0].Members[1].Address = "198.18.0.4:7100" // the IP the pod had before it was recreated

	tests := []struct {
		name string
		mode v1alpha1.StorageMode
		prev *partmap.Map
		got  func(a partmap.Addresser) string
		want string
	}{
		{"a member with a pod IP", v1alpha1.StorageManaged, prev, func(a partmap.Addresser) string { return a.MemberAddress("spine", 0) }, "198.18.0.3:7100"},
		{"a member whose pod has no IP keeps the previous map's address", v1alpha1.StorageManaged, prev,
			func(a partmap.Addresser) string { return a.MemberAddress("spine", 1) }, "198.18.0.4:7100"},
		{"a member with neither has no address", v1alpha1.StorageManaged, nil,
			func(a partmap.Addresser) string { return a.MemberAddress("spine", 1) }, ""},
		{"a managed shard by its IPv4 address on a dual-stack network", v1alpha1.StorageManaged, prev,
			func(a partmap.Addresser) string { return a.ShardAddress(0, 0) }, "198.18.0.7:7000"},
		{"a managed shard without a pod has no address", v1alpha1.StorageManaged, prev,
			func(a partmap.Addresser) string { return a.ShardAddress(0, 1) }, ""},
		{"an external shard keeps its Service's name", v1alpha1.StorageExternal, prev,
			func(a partmap.Addresser) string { return a.ShardAddress(0, 0) }, "shop-rack-0-0.ns.svc:7000"},
		{"a redis-operator shard keeps its DNS name", v1alpha1.StorageRedisOperator, prev,
			func(a partmap.Addresser) string { return a.ShardAddress(0, 0) }, "shop-rack-0-0-0.shop-rack-0-0-headless.ns.svc:7000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := podAddresser{t: topo, namespace: "ns", mode: tc.mode, pods: pods, prev: tc.prev}
			if got := tc.got(a); got != tc.want {
				t.Fatalf("address %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRedisAddress checks the Redis addresses the map gives clients with
// spec.dataPlane.directReads.
func TestRedisAddress(t *testing.T) {
	pods := map[string]*corev1.Pod{"shop-rack-0-0": {Status: corev1.PodStatus{PodIP: "198.18.0.7"}}}
	tests := []struct {
		name    string
		storage v1alpha1.StorageSpec
		prev    string // the previous map's Redis of shard 0-1
		shard   int
		want    string
	}{
		{"a managed shard by its pod's IP", v1alpha1.StorageSpec{Mode: v1alpha1.StorageManaged}, "", 0, "198.18.0.7:6379"},
		{"a managed shard without a pod keeps the previous map's", v1alpha1.StorageSpec{Mode: v1alpha1.StorageManaged}, "198.18.0.8:6379", 1, "198.18.0.8:6379"},
		{"a managed shard with neither has none", v1alpha1.StorageSpec{Mode: v1alpha1.StorageManaged}, "", 1, ""},
		{"a managed shard with TLS by the name its certificate carries",
			v1alpha1.StorageSpec{Mode: v1alpha1.StorageManaged, TLS: &v1alpha1.RedisTLSSpec{CertSecretName: "cert"}}, "", 0,
			"shop-rack-0-0.shop-rack-0.ns.svc:6379"},
		{"an external shard by its endpoint",
			v1alpha1.StorageSpec{Mode: v1alpha1.StorageExternal, External: []string{"redis-a.example.test:6380", "redis-b.example.test:6380"}}, "", 1,
			"redis-b.example.test:6380"},
		{"a redis-operator shard by its pod's DNS name", v1alpha1.StorageSpec{Mode: v1alpha1.StorageRedisOperator}, "", 0,
			"shop-rack-0-0-0.shop-rack-0-0-headless.ns.svc:6379"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := v1alpha1.CacheClusterSpec{
				Storage:   tc.storage,
				DataPlane: &v1alpha1.DataPlaneSpec{DirectReads: true},
				Layers:    []v1alpha1.NamedLayer{{Name: "spine", CacheLayerSpec: v1alpha1.CacheLayerSpec{Nodes: ptr.To[int32](1), VirtualNodes: 16}}},
			}
			spec.Storage.Racks, spec.Storage.ShardsPerRack = 1, 2
			topo, err := layout.New("shop", spec, []layout.Layer{{Name: "spine", Spec: spec.Layers[0].CacheLayerSpec}})
			if err != nil {
				t.Fatal(err)
			}
			prev, err := topo.Map(nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			prev.Storage.Racks[0].Shards[1].Redis = tc.prev
			a := podAddresser{t: topo, namespace: "ns", mode: tc.storage.Mode, pods: pods, prev: prev}
			if got := a.RedisAddress(0, tc.shard); got != tc.want {
				t.Fatalf("Redis address %q, want %q", got, tc.want)
			}
			m, err := topo.Map(nil, a)
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Storage.Racks[0].Shards[tc.shard].Redis; got != tc.want {
				t.Fatalf("the map names Redis %q, want %q", got, tc.want)
			}
		})
	}
}
