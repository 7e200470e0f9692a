package switchfabric_test

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/internal/testing/kubetest"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/internal/testing/switchtest"
	"github.com/distcache/distcache/operator/controller/cachecluster"
	"github.com/distcache/distcache/operator/controller/switchfabric"
	"github.com/distcache/distcache/placement/partmap"
)

// env is the package's control plane: a real kube-apiserver and etcd.
var env *kubetest.Env

func TestMain(m *testing.M) { kubetest.Main(m, &env) }

// operator is a replica of the operator a test runs: the CacheCluster
// and SwitchFabric controllers in a manager.
type operator struct {
	reg     *prometheus.Registry // the fleets' metrics
	elected <-chan struct{}      // closed once the replica leads (at once without leader election)
	stop    func()               // stops the replica before the test ends
}

// operatorConfig is the manager's options and what the reconcilers take
// beside the manager's parts.
type operatorConfig struct {
	manager ctrl.Options
	replica string           // the SwitchFabric controller's Replica
	now     func() time.Time // the CacheCluster controller's clock, when set
}

type operatorOption func(*operatorConfig)

// withClusterClock runs the CacheCluster controller on clock now.
func withClusterClock(now func() time.Time) operatorOption {
	return func(c *operatorConfig) { c.now = now }
}

// asReplica runs the operator as replica name, electing a leader through
// the Lease lease in ns.
func asReplica(ns, lease, name string) operatorOption {
	return func(c *operatorConfig) {
		c.replica = name
		c.manager.LeaderElection = true
		c.manager.LeaderElectionID = lease
		c.manager.LeaderElectionNamespace = ns
		c.manager.LeaderElectionReleaseOnCancel = true
		// Quick to hand the Lease over; the tests wait on outcomes.
		c.manager.LeaseDuration = ptr.To(2 * time.Second)
		c.manager.RenewDeadline = ptr.To(1500 * time.Millisecond)
		c.manager.RetryPeriod = ptr.To(100 * time.Millisecond)
	}
}

// startOperator runs the operator until the test ends, and returns the
// registry of the fleets' metrics.
func startOperator(t *testing.T, opts ...operatorOption) *prometheus.Registry {
	t.Helper()
	return runOperator(t, opts...).reg
}

// runOperator runs the operator until the test ends or its stop.
func runOperator(t *testing.T, opts ...operatorOption) *operator {
	t.Helper()
	cfg := operatorConfig{manager: ctrl.Options{
		Scheme:     env.Scheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	}}
	for _, o := range opts {
		o(&cfg)
	}
	mgr, err := ctrl.NewManager(env.Config, cfg.manager)
	if err != nil {
		t.Fatal(err)
	}
	rec, reg := mgr.GetEventRecorder("distcache-operator"), prometheus.NewRegistry()
	for _, setup := range []func(ctrl.Manager) error{
		(&cachecluster.Reconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Recorder: rec, Now: cfg.now}).SetupWithManager,
		(&switchfabric.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Config: mgr.GetConfig(), Recorder: rec,
			Replica: cfg.replica, Metrics: reg}).SetupWithManager,
	} {
		if err := setup(mgr); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager of replica %q: %v", cfg.replica, err)
		}
	}()
	stop := sync.OnceFunc(func() { cancel(); <-done })
	t.Cleanup(stop)
	return &operator{reg: reg, elected: mgr.Elected(), stop: stop}
}

// namespace creates a namespace of its own for a test.
func namespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "sf-"}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

type fabricOption func(*v1alpha1.SwitchFabric)

// spineSwitch adds a spine switch at the given P4Runtime and data
// addresses.
func spineSwitch(name, p4rt, data string) fabricOption {
	return func(f *v1alpha1.SwitchFabric) {
		f.Spec.Switches = append(f.Spec.Switches, v1alpha1.Switch{Name: name, DeviceID: int64(len(f.Spec.Switches) + 1),
			Role: v1alpha1.RoleSpine, P4RuntimeAddress: p4rt, GNMIAddress: p4rt, DataAddress: data})
	}
}

func withDriver(d v1alpha1.FabricDriver) fabricOption {
	return func(f *v1alpha1.SwitchFabric) {
		f.Spec.Driver = d
		if d == v1alpha1.DriverONOS {
			f.Spec.ONOS = &v1alpha1.ONOSSpec{Endpoint: "http://127.0.0.1:1/onos/v1"}
		}
	}
}

func withPipeline(p string) fabricOption {
	return func(f *v1alpha1.SwitchFabric) { f.Spec.Pipeline = p }
}

func withTLSSecret(name string) fabricOption {
	return func(f *v1alpha1.SwitchFabric) { f.Spec.TLSSecretRef = &v1alpha1.LocalSecretReference{Name: name} }
}

// newFabric creates a stratum SwitchFabric running the v1model pipeline;
// it is deleted when the test ends, so that the operators of later tests
// run no fleet for it.
func newFabric(t *testing.T, ns, name string, opts ...fabricOption) *v1alpha1.SwitchFabric {
	t.Helper()
	f := &v1alpha1.SwitchFabric{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.SwitchFabricSpec{Driver: v1alpha1.DriverStratum, Pipeline: "distcache-v1model"}}
	for _, o := range opts {
		o(f)
	}
	if err := env.Client.Create(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Client.Delete(context.Background(), f.DeepCopy()); client.IgnoreNotFound(err) != nil {
			t.Errorf("cannot delete SwitchFabric %s: %v", f.Name, err)
		}
	})
	return f
}

// newCluster creates a CacheCluster with one storage shard and a spine
// layer on fabric's spine switches, changed by opts; its failover acts
// within a second. It is deleted when the test ends, so that the
// operators of later tests, which watch every namespace, do not program
// the fabric.
func newCluster(t *testing.T, ns, name, fabric string, opts ...func(*v1alpha1.CacheCluster)) *v1alpha1.CacheCluster {
	t.Helper()
	cc := &v1alpha1.CacheCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1alpha1.CacheClusterSpec{
		Storage: v1alpha1.StorageSpec{Mode: v1alpha1.StorageManaged, Racks: 1, ShardsPerRack: 1},
		Layers: []v1alpha1.NamedLayer{{Name: "spine", CacheLayerSpec: v1alpha1.CacheLayerSpec{Backend: v1alpha1.BackendSwitch,
			Switch: &v1alpha1.SwitchLayerSpec{FabricRef: fabric, Role: v1alpha1.RoleSpine}}}},
		Failover: v1alpha1.FailoverSpec{GracePeriod: &metav1.Duration{Duration: 500 * 1e6}, HoldDown: &metav1.Duration{Duration: 1e9}},
	}}
	for _, o := range opts {
		o(cc)
	}
	if err := env.Client.Create(context.Background(), cc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Client.Delete(context.Background(), cc.DeepCopy()); client.IgnoreNotFound(err) != nil {
			t.Errorf("cannot delete cluster %s: %v", name, err)
		}
	})
	return cc
}

// twoSpines starts two software switches, fabric "fabric" of them as
// spines and cluster "shop" in ns whose spine layer uses them, changed
// by opts; it returns the first switch, the fabric and the cluster.
func twoSpines(t *testing.T, ns string, opts ...func(*v1alpha1.CacheCluster)) (*switchtest.Target, *v1alpha1.SwitchFabric, *v1alpha1.CacheCluster) {
	t.Helper()
	target, other := switchtest.StartTarget(t, 1, 1), switchtest.StartTarget(t, 1, 2)
	f := newFabric(t, ns, "fabric", spineSwitch("spine-0", target.P4Runtime, target.Addr().String()),
		spineSwitch("spine-1", other.P4Runtime, other.Addr().String()))
	return target, f, newCluster(t, ns, "shop", "fabric", opts...)
}

// fabricStatus waits until the fabric's status satisfies cond.
func fabricStatus(t *testing.T, f *v1alpha1.SwitchFabric, what string, cond func(*v1alpha1.SwitchFabricStatus) bool) {
	t.Helper()
	poll.Eventually(t, what, func() (bool, error) {
		err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(f), f)
		return err == nil && f.Status.ObservedGeneration == f.Generation && cond(&f.Status), err
	})
}

// condition is the fabric's condition of type t, or nil.
func condition(s *v1alpha1.SwitchFabricStatus, t v1alpha1.ConditionType) *metav1.Condition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == string(t) {
			return &s.Conditions[i]
		}
	}
	return nil
}

// is says whether the status's condition t has status ok and reason.
func is(s *v1alpha1.SwitchFabricStatus, t v1alpha1.ConditionType, ok bool, reason string) bool {
	c := condition(s, t)
	want := metav1.ConditionFalse
	if ok {
		want = metav1.ConditionTrue
	}
	return c != nil && c.Status == want && c.Reason == reason
}

// publishedMap is cc's partition map as published.
func publishedMap(cc *v1alpha1.CacheCluster) (*partmap.Map, error) {
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: cc.Namespace, Name: cachecluster.MapConfigMapName(cc.Name)}, cm); err != nil {
		return nil, err
	}
	return partmap.Decode([]byte(cm.Data[cachecluster.MapKey]))
}

// hasEvent says whether an event of reason about f mentions text.
func hasEvent(f *v1alpha1.SwitchFabric, reason, text string) (bool, error) {
	var evs eventsv1.EventList
	if err := env.Client.List(context.Background(), &evs, client.InNamespace(f.Namespace)); err != nil {
		return false, err
	}
	for _, e := range evs.Items {
		if e.Reason == reason && e.Regarding.Name == f.Name && bytes.Contains([]byte(e.Note), []byte(text)) {
			return true, nil
		}
	}
	return false, nil
}
