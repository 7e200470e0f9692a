package cachecluster_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/internal/testing/kubetest"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/operator/controller/cachecluster"
)

// env is the package's control plane: a real kube-apiserver and etcd.
var env *kubetest.Env

func TestMain(m *testing.M) { kubetest.Main(m, &env) }

// clock is the reconciler's time, moved by the test.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

// operator runs the CacheCluster controller in a manager until the test
// ends or stop is called.
type operator struct {
	stop func()
	done chan struct{}
}

func startOperator(t *testing.T, clk *clock, opts ...func(*cachecluster.Reconciler)) *operator {
	t.Helper()
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:  env.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		// A restarted operator registers the same controller again.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := cachecluster.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	r := &cachecluster.Reconciler{
		Client: mgr.GetClient(), Scheme: mgr.GetScheme(),
		Recorder: mgr.GetEventRecorder("distcache-operator"), Now: clk.Now, Metrics: metrics,
	}
	for _, o := range opts {
		o(r)
	}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	op := &operator{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(op.done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(op.Stop)
	return op
}

// Stop stops the manager and waits for it.
func (o *operator) Stop() { o.stop(); <-o.done }

type clusterOption func(*v1alpha1.CacheCluster)

func withStorage(mode v1alpha1.StorageMode, racks, shards int32, external ...string) clusterOption {
	return func(cc *v1alpha1.CacheCluster) {
		cc.Spec.Storage = v1alpha1.StorageSpec{Mode: mode, Racks: racks, ShardsPerRack: shards, External: external}
	}
}

func withLayer(name string, nodes int32, bound bool) clusterOption {
	return func(cc *v1alpha1.CacheCluster) {
		l := v1alpha1.NamedLayer{Name: name, CacheLayerSpec: v1alpha1.CacheLayerSpec{BoundToRacks: bound}}
		if !bound {
			l.Nodes = ptr.To(nodes)
		}
		cc.Spec.Layers = append(cc.Spec.Layers, l)
	}
}

// newCluster is a CacheCluster in its own namespace, created in the API.
func newCluster(t *testing.T, name string, opts ...clusterOption) *v1alpha1.CacheCluster {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "cc-"}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	cc := &v1alpha1.CacheCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns.Name}}
	for _, o := range opts {
		o(cc)
	}
	if err := env.Client.Create(context.Background(), cc); err != nil {
		t.Fatal(err)
	}
	return cc
}

// eventually waits until cond holds (see poll.Eventually).
func eventually(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	poll.Eventually(t, what, cond)
}

func get(t *testing.T, obj client.Object, ns, name string) error {
	t.Helper()
	return env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj)
}

// updateSpec changes cc's stored spec with mutate, again on a conflict
// with the operator's status patches.
func updateSpec(t *testing.T, cc *v1alpha1.CacheCluster, mutate func(*v1alpha1.CacheCluster)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		stored := &v1alpha1.CacheCluster{}
		if err := get(t, stored, cc.Namespace, cc.Name); err != nil {
			return err
		}
		mutate(stored)
		return env.Client.Update(context.Background(), stored)
	})
	if err != nil {
		t.Fatal(err)
	}
}
