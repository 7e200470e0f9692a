package cachecluster_test

import (
	"context"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/operator/controller/cachecluster"
	"github.com/distcache/distcache/placement/partmap"
)

// TestScaleLayer grows a layer: the StatefulSet follows, the new member
// gets a fresh id, and the existing members keep theirs.
func TestScaleLayer(t *testing.T) {
	startOperator(t, &clock{t: time.Now()})
	cc := newCluster(t, "grow", withLayer("spine", 2, false))
	var before *partmap.Map
	eventually(t, "map v1", func() (bool, error) {
		var err error
		before, err = publishedMap(t, cc)
		return err == nil, err
	})
	stored := &v1alpha1.CacheCluster{}
	if err := get(t, stored, cc.Namespace, cc.Name); err != nil {
		t.Fatal(err)
	}
	// A merge patch, as kubectl applies it: the operator updates the object
	// (finalizer, status) concurrently, so an Update could conflict.
	base := stored.DeepCopy()
	stored.Spec.Layers[0].Nodes = ptr.To[int32](3)
	if err := env.Client.Patch(context.Background(), stored, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	var after *partmap.Map
	eventually(t, "map v2 with three members", func() (bool, error) {
		var err error
		after, err = publishedMap(t, cc)
		return err == nil && after.Version == 2 && len(after.Layers[0].Members) == 3, err
	})
	for i, m := range before.Layers[0].Members {
		if after.Layers[0].Members[i].ID != m.ID {
			t.Fatalf("member %s changed id %d → %d", m.Name, m.ID, after.Layers[0].Members[i].ID)
		}
	}
	eventually(t, "StatefulSet scaled", func() (bool, error) {
		sts := &appsv1.StatefulSet{}
		err := get(t, sts, cc.Namespace, "grow-spine")
		return err == nil && *sts.Spec.Replicas == 3, err
	})
}

// TestStorageModes checks the backend objects of the redisOperator and
// external modes and the shim addresses the map gives them.
func TestStorageModes(t *testing.T) {
	startOperator(t, &clock{t: time.Now()})
	t.Run("redisOperator", func(t *testing.T) {
		cc := newCluster(t, "ot", withStorage(v1alpha1.StorageRedisOperator, 1, 2), withLayer("spine", 1, false),
			withPersistence("5Gi", "fast"),
			func(cc *v1alpha1.CacheCluster) {
				cc.Spec.Storage.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}
				cc.Spec.ShimResources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}
				cc.Spec.Storage.Scheduling = &v1alpha1.PodScheduling{NodeSelector: map[string]string{"disk": "ssd"}, PriorityClassName: "storage"}
			})
		eventually(t, "map published", func() (bool, error) { _, err := publishedMap(t, cc); return err == nil, err })
		r := &unstructured.Unstructured{}
		r.SetGroupVersionKind(cachecluster.RedisGVK)
		if err := get(t, r, cc.Namespace, "ot-rack-0-1"); err != nil {
			t.Fatalf("Redis (stand-in CRD) for shard ot-rack-0-1: %v", err)
		}
		sidecars, _, _ := unstructured.NestedSlice(r.Object, "spec", "sidecars")
		if len(sidecars) != 1 || sidecars[0].(map[string]any)["name"] != "shim" {
			t.Fatalf("sidecars %v, want the shim", sidecars)
		}
		if mem, _, _ := unstructured.NestedString(r.Object, "spec", "kubernetesConfig", "resources", "limits", "memory"); mem != "2Gi" {
			t.Fatalf("Redis memory limit %q, want storage.resources' 2Gi", mem)
		}
		if cpu, _, _ := unstructured.NestedString(sidecars[0].(map[string]any), "resources", "requests", "cpu"); cpu != "250m" {
			t.Fatalf("shim CPU request %q, want shimResources' 250m", cpu)
		}
		// The scheduling the Redis kind has, and the default anti-affinity
		// among the cluster's storage pods.
		if ssd, _, _ := unstructured.NestedString(r.Object, "spec", "nodeSelector", "disk"); ssd != "ssd" || r.Object["spec"].(map[string]any)["priorityClassName"] != "storage" {
			t.Fatalf("Redis spec %v, want storage.scheduling's node selector and priority class", r.Object["spec"])
		}
		terms, _, _ := unstructured.NestedSlice(r.Object, "spec", "affinity", "podAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution")
		if len(terms) != 1 {
			t.Fatalf("Redis anti-affinity %v, want the default preferred term", terms)
		}
		m, _ := publishedMap(t, cc)
		if got, want := m.Storage.Racks[0].Shards[1].Address, "ot-rack-0-1-0.ot-rack-0-1-headless."+cc.Namespace+".svc:7000"; got != want {
			t.Fatalf("shim address %q, want %q", got, want)
		}
		claim, _, _ := unstructured.NestedMap(r.Object, "spec", "storage", "volumeClaimTemplate", "spec")
		if size, _, _ := unstructured.NestedString(claim, "resources", "requests", "storage"); size != "5Gi" || claim["storageClassName"] != "fast" {
			t.Fatalf("volume claim template %v, want storage.persistence's 5Gi of class fast", claim)
		}

		// The redis-operator's pods, <shard>-0 with the Redis object's
		// labels, become Ready one by one: the shards are counted, and the
		// cluster is Ready with the last.
		setPodReady(t, cc, "ot-spine-0", true, time.Now())
		for i, pod := range []string{"ot-rack-0-0-0", "ot-rack-0-1-0"} {
			setPodReady(t, cc, pod, true, time.Now())
			stored := &v1alpha1.CacheCluster{}
			eventually(t, pod+" counted", func() (bool, error) {
				err := get(t, stored, cc.Namespace, cc.Name)
				return err == nil && stored.Status.ReadyShards == int32(i+1), err
			})
			if ready := meta.IsStatusConditionTrue(stored.Status.Conditions, string(v1alpha1.ConditionReady)); ready != (i == 1) {
				t.Fatalf("with %d of 2 shards ready: Ready=%v, status %+v", i+1, ready, stored.Status.Conditions)
			}
		}
		if stored := (&v1alpha1.CacheCluster{}); get(t, stored, cc.Namespace, cc.Name) != nil || stored.Status.Persistence != "unmanaged/pvc" {
			t.Fatalf("status.persistence %q, want unmanaged/pvc", stored.Status.Persistence)
		}

		// A Redis object deleted behind the operator's back comes back.
		if err := env.Client.Delete(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		eventually(t, "Redis recreated", func() (bool, error) {
			again := &unstructured.Unstructured{}
			again.SetGroupVersionKind(cachecluster.RedisGVK)
			err := get(t, again, cc.Namespace, "ot-rack-0-1")
			return err == nil && again.GetUID() != r.GetUID(), client.IgnoreNotFound(err)
		})
	})
	t.Run("external", func(t *testing.T) {
		cc := newCluster(t, "ext", withStorage(v1alpha1.StorageExternal, 2, 1, "192.0.2.1:6379", "192.0.2.2:6379"), withLayer("spine", 1, false))
		eventually(t, "map published", func() (bool, error) { _, err := publishedMap(t, cc); return err == nil, err })
		dep := &appsv1.Deployment{}
		if err := get(t, dep, cc.Namespace, "ext-rack-1-0"); err != nil {
			t.Fatal(err)
		}
		if args := dep.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--redis=192.0.2.2:6379") || !slices.Contains(args, "--shard=ext-rack-1-0") {
			t.Fatalf("shim args %v, want rack 1's endpoint and shard name", args)
		}
		if err := get(t, &corev1.Service{}, cc.Namespace, "ext-rack-1-0"); err != nil {
			t.Fatal(err)
		}
		m, _ := publishedMap(t, cc)
		if got := m.Storage.Racks[1].Shards[0].Address; got != "ext-rack-1-0."+cc.Namespace+".svc:7000" {
			t.Fatalf("shim address %q", got)
		}
	})
	t.Run("external with a password and TLS", func(t *testing.T) {
		cc := newCluster(t, "sec", withStorage(v1alpha1.StorageExternal, 1, 1, "192.0.2.10:6380"), withLayer("spine", 1, false),
			func(cc *v1alpha1.CacheCluster) {
				cc.Spec.Storage.Auth = &v1alpha1.RedisAuthSpec{SecretName: "redis-login", Username: "shim"}
				cc.Spec.Storage.TLS = &v1alpha1.RedisTLSSpec{CASecretName: "redis-ca", ServerName: "redis.example"}
			})
		eventually(t, "map published", func() (bool, error) { _, err := publishedMap(t, cc); return err == nil, err })
		dep := &appsv1.Deployment{}
		if err := get(t, dep, cc.Namespace, "sec-rack-0-0"); err != nil {
			t.Fatal(err)
		}
		c := dep.Spec.Template.Spec.Containers[0]
		for _, want := range []string{"--redis-password-file=/etc/distcache/redis-auth/password", "--redis-username=shim",
			"--redis-tls", "--redis-tls-ca-file=/etc/distcache/redis-tls/ca.crt", "--redis-tls-server-name=redis.example"} {
			if !slices.Contains(c.Args, want) {
				t.Errorf("shim args %v, want %s", c.Args, want)
			}
		}
		secrets := map[string]string{} // volume → Secret
		for _, v := range dep.Spec.Template.Spec.Volumes {
			if v.Secret != nil {
				secrets[v.Name] = v.Secret.SecretName
			}
		}
		if secrets[cachecluster.RedisAuthVolume] != "redis-login" || secrets[cachecluster.RedisTLSVolume] != "redis-ca" {
			t.Fatalf("Secret volumes %v, want the login and the CA bundle", secrets)
		}
		mounted := map[string]string{}
		for _, m := range c.VolumeMounts {
			if m.ReadOnly {
				mounted[m.Name] = m.MountPath
			}
		}
		if mounted[cachecluster.RedisAuthVolume] != cachecluster.RedisAuthMountPath || mounted[cachecluster.RedisTLSVolume] != cachecluster.RedisTLSMountPath {
			t.Fatalf("read-only mounts %v, want the Secrets at %s and %s", mounted, cachecluster.RedisAuthMountPath, cachecluster.RedisTLSMountPath)
		}
	})
}
