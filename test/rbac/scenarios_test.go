package rbac_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/internal/freeport"
	"github.com/distcache/distcache/operator/controller/cachecluster"
	"github.com/distcache/distcache/operator/manager"
	"github.com/distcache/distcache/placement/partmap"
)

// scenarios drive one operator, running as its ServiceAccount, through what
// users and kubelets do, with an administrator's client in namespace ns.
type scenarios struct {
	ns string
	// owner is the test that outlives the scenarios: it stops the operator.
	owner *testing.T
	// statusPort is where the pods' status servers listen, each on its
	// pod's IP (127.0.0.x), as data-plane processes do on port 9100.
	statusPort int
	pods       int // pods given an IP so far
}

func (s *scenarios) get(obj client.Object, name string) error {
	return env.Client.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: name}, obj)
}

// start runs the whole operator with leader election in its namespace.
func (s *scenarios) start(t *testing.T, cfg *rest.Config) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- manager.Run(ctx, cfg, manager.Options{
			MetricsAddr: "0", ProbeAddr: "0", LeaderElection: true, LeaderElectionNamespace: operatorNamespace,
			SkipNameValidation: true, PodMetricsPort: s.statusPort,
		}, logr.Discard())
	}()
	s.owner.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			s.owner.Errorf("operator: %v", err)
		}
	})
	eventually(t, "leader Lease held", func() (bool, error) {
		l := &coordinationv1.Lease{}
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: manager.LeaderElectionID}, l)
		return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "", client.IgnoreNotFound(err)
	})
}

// newCluster creates a CacheCluster with a 100 ms grace period and a 1 s
// hold-down, so the failure scenarios need no waiting.
func (s *scenarios) newCluster(t *testing.T, name string, storage v1alpha1.StorageSpec, spine int32) *v1alpha1.CacheCluster {
	t.Helper()
	cc := &v1alpha1.CacheCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns}, Spec: v1alpha1.CacheClusterSpec{
		Storage:       storage,
		Layers:        []v1alpha1.NamedLayer{{Name: "spine", CacheLayerSpec: v1alpha1.CacheLayerSpec{Nodes: ptr.To(spine)}}},
		Failover:      v1alpha1.FailoverSpec{GracePeriod: &metav1.Duration{Duration: 100 * time.Millisecond}, HoldDown: &metav1.Duration{Duration: time.Second}},
		NetworkPolicy: &v1alpha1.NetworkPolicySpec{Enabled: true},
	}}
	if err := env.Client.Create(context.Background(), cc); err != nil {
		t.Fatal(err)
	}
	return cc
}

// setPod creates or updates pod name of cluster cc, Ready or not since an
// hour ago: past every grace period and hold-down.
func (s *scenarios) setPod(t *testing.T, cc string, name string, ready bool) {
	t.Helper()
	s.setPodOf(t, cc, name, corev1.PodSpec{Containers: []corev1.Container{{Name: "distcache", Image: "distcache"}}}, ready)
}

// setPodOf is setPod for a pod created, if it does not exist, with spec.
func (s *scenarios) setPodOf(t *testing.T, cc string, name string, spec corev1.PodSpec, ready bool) {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{}
	if err := s.get(pod, name); apierrors.IsNotFound(err) {
		pod = &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns, Labels: map[string]string{cachecluster.LabelCluster: cc}},
			Spec:       spec,
		}
		if err := env.Client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
	} else if err != nil {
		t.Fatal(err)
	}
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st, LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour))}}
	if pod.Status.PodIP == "" {
		s.pods++
		pod.Status.PodIP = fmt.Sprintf("127.0.0.%d", 10+s.pods)
		s.serveStatus(t, pod.Status.PodIP, cc)
	}
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
}

func (s *scenarios) publishedMap() (*partmap.Map, error) {
	cm := &corev1.ConfigMap{}
	if err := s.get(cm, cachecluster.MapConfigMapName("shop")); err != nil {
		return nil, err
	}
	return partmap.Decode([]byte(cm.Data[cachecluster.MapKey]))
}

func (s *scenarios) memberState(name string) (partmap.MemberState, error) {
	m, err := s.publishedMap()
	if err != nil {
		return "", err
	}
	for _, l := range m.Layers {
		for _, mb := range l.Members {
			if mb.Name == name {
				return mb.State, nil
			}
		}
	}
	return "", nil
}

func (s *scenarios) hasEvent(reason, note string) (bool, error) {
	var evs eventsv1.EventList
	if err := env.Client.List(context.Background(), &evs, client.InNamespace(s.ns)); err != nil {
		return false, err
	}
	for _, e := range evs.Items {
		if e.Reason == reason && strings.Contains(e.Note, note) {
			return true, nil
		}
	}
	return false, nil
}

// create: a managed cluster's objects, its pods become Ready, the cluster
// reports Ready and says so in an event.
func (s *scenarios) create(t *testing.T) {
	cc := s.newCluster(t, "shop", v1alpha1.StorageSpec{Racks: 2, ShardsPerRack: 1}, 2)
	eventually(t, "objects created", func() (bool, error) {
		for _, n := range []string{"shop-spine", "shop-rack-0", "shop-rack-1"} {
			if err := s.get(&appsv1.StatefulSet{}, n); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			if err := s.get(&corev1.Service{}, n); err != nil {
				return false, client.IgnoreNotFound(err)
			}
		}
		err := s.get(&networkingv1.NetworkPolicy{}, "shop-data-plane")
		return err == nil, client.IgnoreNotFound(err)
	})
	for _, p := range []string{"shop-spine-0", "shop-spine-1", "shop-rack-0-0", "shop-rack-1-0"} {
		s.setPod(t, cc.Name, p, true)
	}
	eventually(t, "cluster Ready", func() (bool, error) {
		err := s.get(cc, cc.Name)
		return err == nil && meta.IsStatusConditionTrue(cc.Status.Conditions, string(v1alpha1.ConditionReady)), err
	})
	eventually(t, "ClusterReady event", func() (bool, error) { return s.hasEvent(cachecluster.EventClusterReady, "") })
}

// failover: a member's pod stops being Ready; it is failed in a new map.
func (s *scenarios) failover(t *testing.T) {
	s.setPod(t, "shop", "shop-spine-1", false)
	eventually(t, "member failed", func() (bool, error) {
		st, err := s.memberState("shop-spine-1")
		return st == partmap.Failed, err
	})
	eventually(t, "MemberFailed event", func() (bool, error) { return s.hasEvent("MemberFailed", "shop-spine-1") })
	var evs eventsv1.EventList
	if err := env.Client.List(context.Background(), &evs, client.InNamespace(s.ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.Reason == "MemberFailed" && (e.Related == nil || e.Related.Kind != "Pod" || e.Related.Name != "shop-spine-1") {
			t.Errorf("MemberFailed event related to %+v, want the member's pod", e.Related)
		}
	}
}

// restore: the pod is Ready past the hold-down; the member is Active again.
func (s *scenarios) restore(t *testing.T) {
	s.setPod(t, "shop", "shop-spine-1", true)
	eventually(t, "member restored", func() (bool, error) {
		st, err := s.memberState("shop-spine-1")
		return st == partmap.Active, err
	})
	eventually(t, "MemberRestored event", func() (bool, error) { return s.hasEvent("MemberRestored", "shop-spine-1") })
}

// scale: a layer grows by one node.
func (s *scenarios) scale(t *testing.T) {
	cc := &v1alpha1.CacheCluster{}
	if err := s.get(cc, "shop"); err != nil {
		t.Fatal(err)
	}
	base := cc.DeepCopy()
	cc.Spec.Layers[0].Nodes = ptr.To[int32](3)
	if err := env.Client.Patch(context.Background(), cc, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "StatefulSet scaled", func() (bool, error) {
		sts := &appsv1.StatefulSet{}
		err := s.get(sts, "shop-spine")
		return err == nil && sts.Spec.Replicas != nil && *sts.Spec.Replicas == 3, err
	})
}

// external: shims in front of given Redis endpoints, as Deployments.
func (s *scenarios) external(t *testing.T) {
	s.newCluster(t, "ext", v1alpha1.StorageSpec{Mode: v1alpha1.StorageExternal, Racks: 1, ShardsPerRack: 1, External: []string{"192.0.2.10:6379"}}, 1)
	eventually(t, "shim Deployment and Service", func() (bool, error) {
		if err := s.get(&appsv1.Deployment{}, "ext-rack-0-0"); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		err := s.get(&corev1.Service{}, "ext-rack-0-0")
		return err == nil, client.IgnoreNotFound(err)
	})
}

// redisOperator: a Redis of the redis-operator per shard.
func (s *scenarios) redisOperator(t *testing.T) {
	s.newCluster(t, "ot", v1alpha1.StorageSpec{Mode: v1alpha1.StorageRedisOperator, Racks: 1, ShardsPerRack: 1}, 1)
	eventually(t, "Redis object", func() (bool, error) {
		r := &unstructured.Unstructured{}
		r.SetGroupVersionKind(cachecluster.RedisGVK)
		err := s.get(r, "ot-rack-0-0")
		return err == nil, client.IgnoreNotFound(err)
	})
}

// layersAndFabrics: a CacheLayer and a SwitchFabric get their status.
func (s *scenarios) layersAndFabrics(t *testing.T) {
	ctx := context.Background()
	layer := &v1alpha1.CacheLayer{ObjectMeta: metav1.ObjectMeta{Name: "tor", Namespace: s.ns},
		Spec: v1alpha1.CacheLayerSpec{Backend: v1alpha1.BackendSwitch, BoundToRacks: true,
			Switch: &v1alpha1.SwitchLayerSpec{FabricRef: "fabric", Role: v1alpha1.RoleStorageLeaf}}}
	// The fabric's TLS Secret does not exist: the operator reads it (and
	// reports it missing) before it would dial the switch.
	fabric := &v1alpha1.SwitchFabric{ObjectMeta: metav1.ObjectMeta{Name: "fabric", Namespace: s.ns},
		Spec: v1alpha1.SwitchFabricSpec{Driver: v1alpha1.DriverStratum, Pipeline: "distcache-v1model", Switches: []v1alpha1.Switch{
			{Name: "tor-0", DeviceID: 1, Role: v1alpha1.RoleStorageLeaf, P4RuntimeAddress: "127.0.0.1:1", Rack: ptr.To[int32](0), DataAddress: "127.0.0.1:2000"},
		}, TLSSecretRef: &v1alpha1.LocalSecretReference{Name: "switch-tls"}}}
	switched := &v1alpha1.CacheCluster{ObjectMeta: metav1.ObjectMeta{Name: "sw", Namespace: s.ns}, Spec: v1alpha1.CacheClusterSpec{
		Storage: v1alpha1.StorageSpec{Racks: 1, ShardsPerRack: 1}, LayerRefs: []string{"tor"}}}
	for _, obj := range []client.Object{layer, fabric, switched} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "statuses observed, the fabric's Secret looked up", func() (bool, error) {
		if err := s.get(layer, layer.Name); err != nil {
			return false, err
		}
		err := s.get(fabric, fabric.Name)
		ready := meta.FindStatusCondition(fabric.Status.Conditions, string(v1alpha1.ConditionReady))
		return err == nil && layer.Status.ObservedGeneration == layer.Generation && fabric.Status.ObservedGeneration == fabric.Generation &&
			ready != nil && ready.Reason == v1alpha1.ReasonTLSSecretInvalid, err
	})
}

// delete: every cluster is deleted; the finalizer removes what they own.
func (s *scenarios) delete(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"shop", "ext", "ot", "sw", "roll", "zoned"} {
		if err := env.Client.Delete(ctx, &v1alpha1.CacheCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns}}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "clusters and their objects gone", func() (bool, error) {
		for _, list := range []client.ObjectList{&v1alpha1.CacheClusterList{}, &appsv1.StatefulSetList{}, &appsv1.DeploymentList{}, &corev1.ServiceList{}} {
			if err := env.Client.List(ctx, list, client.InNamespace(s.ns)); err != nil || meta.LenList(list) != 0 {
				return false, err
			}
		}
		return true, nil
	})
}

// patchCluster changes cluster name's spec with change.
func (s *scenarios) patchCluster(t *testing.T, name string, change func(*v1alpha1.CacheClusterSpec)) {
	t.Helper()
	cc := &v1alpha1.CacheCluster{}
	if err := s.get(cc, name); err != nil {
		t.Fatal(err)
	}
	base := cc.DeepCopy()
	change(&cc.Spec)
	if err := env.Client.Patch(context.Background(), cc, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
}

// networkPolicies: who may reach the data plane changes, then the policy
// is turned off.
func (s *scenarios) networkPolicies(t *testing.T) {
	s.patchCluster(t, "shop", func(spec *v1alpha1.CacheClusterSpec) {
		spec.NetworkPolicy.Clients = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "checkout"}}
	})
	eventually(t, "policy updated", func() (bool, error) {
		np := &networkingv1.NetworkPolicy{}
		if err := s.get(np, "shop-data-plane"); err != nil {
			return false, err
		}
		for _, in := range np.Spec.Ingress {
			for _, from := range in.From {
				if from.PodSelector != nil && from.PodSelector.MatchLabels["app"] == "checkout" {
					return true, nil
				}
			}
		}
		return false, nil
	})
	s.patchCluster(t, "ext", func(spec *v1alpha1.CacheClusterSpec) { spec.NetworkPolicy.Enabled = false })
	eventually(t, "policy deleted", func() (bool, error) {
		err := s.get(&networkingv1.NetworkPolicy{}, "ext-data-plane")
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

// gatewayDaemonSet: a cluster's gateway becomes a DaemonSet, which
// replaces its Deployment, then its resources change.
func (s *scenarios) gatewayDaemonSet(t *testing.T) {
	name := cachecluster.GatewayName("ext")
	s.patchCluster(t, "ext", func(spec *v1alpha1.CacheClusterSpec) { spec.Gateway.Mode = v1alpha1.GatewayDaemonSet })
	eventually(t, "DaemonSet replaces the Deployment", func() (bool, error) {
		if err := s.get(&appsv1.DaemonSet{}, name); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		err := s.get(&appsv1.Deployment{}, name)
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	cpu := resource.MustParse("150m")
	s.patchCluster(t, "ext", func(spec *v1alpha1.CacheClusterSpec) {
		spec.Gateway.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: cpu}}
	})
	eventually(t, "DaemonSet updated", func() (bool, error) {
		ds := &appsv1.DaemonSet{}
		if err := s.get(ds, name); err != nil {
			return false, err
		}
		for _, c := range ds.Spec.Template.Spec.Containers {
			if got, ok := c.Resources.Requests[corev1.ResourceCPU]; ok && got.Equal(cpu) {
				return true, nil
			}
		}
		return false, nil
	})
}

// gatewayOff: a cluster's gateway is scaled to none, which deletes its
// DaemonSet and Service.
func (s *scenarios) gatewayOff(t *testing.T) {
	s.patchCluster(t, "ext", func(spec *v1alpha1.CacheClusterSpec) { spec.Gateway.Replicas = ptr.To(int32(0)) })
	eventually(t, "gateway deleted", func() (bool, error) {
		err := s.get(&appsv1.DaemonSet{}, cachecluster.GatewayName("ext"))
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

// redisResources: the Redis servers' resources change.
func (s *scenarios) redisResources(t *testing.T) {
	s.patchCluster(t, "ot", func(spec *v1alpha1.CacheClusterSpec) {
		spec.Storage.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("3Gi")}
	})
	eventually(t, "Redis updated", func() (bool, error) {
		r := &unstructured.Unstructured{}
		r.SetGroupVersionKind(cachecluster.RedisGVK)
		if err := s.get(r, "ot-rack-0-0"); err != nil {
			return false, err
		}
		mem, _, _ := unstructured.NestedString(r.Object, "spec", "kubernetesConfig", "resources", "limits", "memory")
		return mem == "3Gi", nil
	})
}

// serveStatus runs a data-plane process's status server (dataplane/metrics)
// on ip as a stand-in for the process itself: it reports the version of the
// map the operator published for cluster cc, as a process that installed it
// would.
func (s *scenarios) serveStatus(t *testing.T, ip, cc string) {
	t.Helper()
	published := func() metrics.Status {
		cm := &corev1.ConfigMap{}
		if err := s.get(cm, cachecluster.MapConfigMapName(cc)); err != nil {
			return metrics.Status{}
		}
		m, err := partmap.Decode([]byte(cm.Data[cachecluster.MapKey]))
		if err != nil {
			return metrics.Status{}
		}
		return metrics.Status{MapVersion: m.Version}
	}
	srv, err := metrics.Listen(net.JoinHostPort(ip, strconv.Itoa(s.statusPort)), prometheus.NewRegistry(), nil, metrics.WithStatus(published))
	if err != nil {
		t.Fatal(err)
	}
	s.owner.Cleanup(func() { _ = srv.Close(context.Background()) })
}

// freePort is a TCP port free on 127.0.0.11, where the first pod's status
// server listens.
func freePort(t *testing.T) int {
	t.Helper()
	ports, _, err := freeport.Ports("127.0.0.11", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}

// drift: someone edits the data-plane ServiceAccount, Role and
// RoleBinding and a layer's PodDisruptionBudget; the operator puts them
// back.
func (s *scenarios) drift(t *testing.T) {
	ctx := context.Background()
	dataPlane := cachecluster.DataPlaneName("shop")
	objs := []struct {
		obj  client.Object
		name string
	}{
		{&corev1.ServiceAccount{}, dataPlane}, {&rbacv1.Role{}, dataPlane}, {&rbacv1.RoleBinding{}, dataPlane},
		{&policyv1.PodDisruptionBudget{}, "shop-spine"},
	}
	for _, o := range objs {
		if err := s.get(o.obj, o.name); err != nil {
			t.Fatal(err)
		}
		base := o.obj.DeepCopyObject().(client.Object)
		l := o.obj.GetLabels()
		l["edited-by"] = "someone"
		o.obj.SetLabels(l)
		if err := env.Client.Patch(ctx, o.obj, client.MergeFrom(base)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "edits undone", func() (bool, error) {
		for _, o := range objs {
			if err := s.get(o.obj, o.name); err != nil || o.obj.GetLabels()["edited-by"] != "" {
				return false, err
			}
		}
		return true, nil
	})
}

// layerRemoved: a layer is added, then removed from the spec; its
// StatefulSet, Service and PodDisruptionBudget go with it.
func (s *scenarios) layerRemoved(t *testing.T) {
	s.patchCluster(t, "shop", func(spec *v1alpha1.CacheClusterSpec) {
		spec.Layers = append(spec.Layers, v1alpha1.NamedLayer{Name: "edge", CacheLayerSpec: v1alpha1.CacheLayerSpec{Nodes: ptr.To[int32](1)}})
	})
	objs := []client.Object{&appsv1.StatefulSet{}, &corev1.Service{}, &policyv1.PodDisruptionBudget{}}
	eventually(t, "the edge layer's objects created", func() (bool, error) {
		for _, obj := range objs {
			if err := s.get(obj, "shop-edge"); err != nil {
				return false, client.IgnoreNotFound(err)
			}
		}
		return true, nil
	})
	s.patchCluster(t, "shop", func(spec *v1alpha1.CacheClusterSpec) { spec.Layers = spec.Layers[:1] })
	eventually(t, "the edge layer's objects deleted", func() (bool, error) {
		for _, obj := range objs {
			if err := s.get(obj, "shop-edge"); !apierrors.IsNotFound(err) {
				return false, client.IgnoreNotFound(err)
			}
		}
		return true, nil
	})
}

// rollout: the operator rolls a cluster's pods onto a new template of
// their StatefulSets, as the StatefulSet controller would have: the test
// plays that controller (the sets' status, their pods) and the kubelet
// (a container restarted). A pod whose template changed only in images is
// patched in place; one whose template changed otherwise is deleted.
func (s *scenarios) rollout(t *testing.T) {
	ctx := context.Background()
	cc := s.newCluster(t, "roll", v1alpha1.StorageSpec{Racks: 1, ShardsPerRack: 1}, 2)
	sets := map[string]*appsv1.StatefulSet{"roll-rack-0": {}, "roll-spine": {}}
	eventually(t, "StatefulSets created", func() (bool, error) {
		for name, sts := range sets {
			if err := s.get(sts, name); err != nil {
				return false, client.IgnoreNotFound(err)
			}
		}
		return true, nil
	})
	hash := sets["roll-spine"].Spec.Template.Annotations[cachecluster.AnnotationPodSpecHash]
	for name, rev := range map[string]string{"roll-rack-0-0": "new", "roll-spine-0": "old", "roll-spine-1": "old"} {
		set, podHash := sets["roll-spine"], hash
		if strings.HasPrefix(name, "roll-rack") {
			set = sets["roll-rack-0"]
		}
		if name == "roll-spine-1" {
			podHash = "an older template's"
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns,
				Labels:      map[string]string{cachecluster.LabelCluster: cc.Name, appsv1.ControllerRevisionHashLabelKey: set.Name + "-" + rev},
				Annotations: map[string]string{cachecluster.AnnotationPodSpecHash: podHash},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: set.Name, UID: set.UID,
					Controller: ptr.To(true)}}},
			Spec: *set.Spec.Template.Spec.DeepCopy(),
		}
		for i := range pod.Spec.Containers {
			pod.Spec.Containers[i].Image = "distcache:old"
		}
		if err := env.Client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		s.setPod(t, cc.Name, name, true)
	}
	// The sets' controller has seen their templates: revision "new".
	eventually(t, "in-place update of roll-spine-0", func() (bool, error) {
		for name, sts := range sets {
			if err := s.get(sts, name); err != nil {
				return false, err
			}
			sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: sts.Generation, Replicas: *sts.Spec.Replicas,
				UpdateRevision: name + "-new", CurrentRevision: name + "-old"}
			if err := env.Client.Status().Update(ctx, sts); err != nil && !apierrors.IsConflict(err) {
				return false, err
			}
		}
		pod := &corev1.Pod{}
		err := s.get(pod, "roll-spine-0")
		return err == nil && pod.Labels[appsv1.ControllerRevisionHashLabelKey] == "roll-spine-new" && pod.Spec.Containers[0].Image != "distcache:old", err
	})
	eventually(t, "PodUpdatedInPlace event", func() (bool, error) { return s.hasEvent(cachecluster.EventPodUpdatedInPlace, "roll-spine-0") })
	// The kubelet restarted the container: the next pod goes.
	pod := &corev1.Pod{}
	if err := s.get(pod, "roll-spine-0"); err != nil {
		t.Fatal(err)
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: pod.Spec.Containers[0].Name, RestartCount: 1, Ready: true}}
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	eventually(t, "roll-spine-1 recreated (deleted)", func() (bool, error) {
		err := s.get(&corev1.Pod{}, "roll-spine-1")
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	eventually(t, "PodRecreated event", func() (bool, error) { return s.hasEvent(cachecluster.EventPodRecreated, "roll-spine-1") })
}
