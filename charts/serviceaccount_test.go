package charts_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/operator/controller/cachecluster"
	"github.com/distcache/distcache/operator/manager"
)

// forbiddenLog records the log lines that report a request the API server
// forbade, and passes every line on to stderr.
type forbiddenLog struct {
	mu    sync.Mutex
	lines []string
}

// forbidden is the operator's log in these tests, and klog's (set once, in
// TestMain): client-go's event broadcaster, which records the leader
// election's Events, reports rejected Events there.
var forbidden = &forbiddenLog{}

func (f *forbiddenLog) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		fmt.Fprintln(os.Stderr, prefix, args)
		if strings.Contains(args, "forbidden") {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.lines = append(f.lines, prefix+" "+args)
		}
	}, funcr.Options{})
}

func (f *forbiddenLog) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.lines
	f.lines = nil
	return l
}

// TestOperatorRunsAsTheChartsServiceAccount installs the chart, then runs
// the operator as the chart's ServiceAccount (the API server authorizes by
// RBAC) through a CacheCluster's life: leader election, creation (finalizer,
// storage and cache StatefulSets, Services, partition map, NetworkPolicy,
// status) and deletion. Nothing it does is forbidden, in either mode; and
// the identity is really confined: it cannot list Secrets, and in
// single-namespace mode not CacheClusters elsewhere.
func TestOperatorRunsAsTheChartsServiceAccount(t *testing.T) {
	needAPIServer(t)
	c := loadChart(t, chartDir())
	for _, tc := range []struct {
		mode   string
		single bool
	}{
		{"cluster-wide", false},
		{"single-namespace", true},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			releaseNS, shop := "sa-"+tc.mode+"-system", "sa-"+tc.mode+"-shop"
			values := newValues(set("secretNamespaces", []any{shop}))
			if tc.single {
				values = newValues(withWatchNamespace(shop))
			}
			if err := env.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: shop}}); err != nil {
				t.Fatal(err)
			}
			w := &warnings{}
			rel := install(t, helmClient(t, releaseNS, w), "sa-"+tc.mode, releaseNS, c, values)
			var sa string
			for _, o := range objects(t, rel.Manifest) {
				if o.GetKind() == "ServiceAccount" {
					sa = o.GetName()
				}
			}
			if sa == "" {
				t.Fatal("the chart rendered no ServiceAccount")
			}
			saCfg, err := env.ServiceAccountConfig(t.Context(), releaseNS, sa)
			if err != nil {
				t.Fatal(err)
			}
			as, err := client.New(saCfg, client.Options{Scheme: env.Scheme})
			if err != nil {
				t.Fatal(err)
			}
			if err := as.List(t.Context(), &corev1.SecretList{}); !apierrors.IsForbidden(err) {
				t.Fatalf("the ServiceAccount listed Secrets (err %v): the test's identity is not confined", err)
			}
			if tc.single {
				err := as.List(t.Context(), &v1alpha1.CacheClusterList{}, client.InNamespace("default"))
				if !apierrors.IsForbidden(err) {
					t.Errorf("in single-namespace mode the ServiceAccount listed CacheClusters in default (err %v)", err)
				}
			}

			logs := forbidden
			_ = logs.take() // from earlier tests
			opts := manager.Options{
				MetricsAddr: "0", ProbeAddr: "0", LeaderElection: true, LeaderElectionNamespace: releaseNS,
				SkipNameValidation: true,
			}
			if tc.single {
				opts.Namespace = shop
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- manager.Run(ctx, saCfg, opts, logs.logger()) }()
			t.Cleanup(func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("operator: %v", err)
				}
			})

			eventually(t, "leader-election Lease held", func() error {
				var l coordinationv1.Lease
				if err := env.Client.Get(ctx, client.ObjectKey{Namespace: releaseNS, Name: manager.LeaderElectionID}, &l); err != nil {
					return err
				}
				if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
					return errors.New("no holder")
				}
				return nil
			})

			cc := managedSample(t, shop)
			if err := env.Client.Create(ctx, cc); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the CacheCluster reconciled", func() error { return reconciled(ctx, cc) })
			if l := logs.take(); len(l) > 0 {
				t.Errorf("the operator was forbidden requests:\n%s", strings.Join(l, "\n"))
			}

			if err := env.Client.Delete(ctx, cc); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the CacheCluster deleted (finalizer removed)", func() error {
				err := env.Client.Get(ctx, client.ObjectKeyFromObject(cc), cc.DeepCopy())
				switch {
				case apierrors.IsNotFound(err):
					return nil
				case err != nil:
					return err
				}
				return errors.New("still there")
			})
			if l := logs.take(); len(l) > 0 {
				t.Errorf("the operator was forbidden requests:\n%s", strings.Join(l, "\n"))
			}
		})
	}
}

// reconciled says why the CacheCluster cc is not yet reconciled as far as
// envtest allows (no pods run): finalizer, status, partition map,
// StatefulSets and NetworkPolicy.
func reconciled(ctx context.Context, cc *unstructured.Unstructured) error {
	var cur v1alpha1.CacheCluster
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cc), &cur); err != nil {
		return err
	}
	if len(cur.Finalizers) == 0 {
		return errors.New("no finalizer")
	}
	if len(cur.Status.Conditions) == 0 {
		return errors.New("no status conditions")
	}
	ns, name := cc.GetNamespace(), cc.GetName()
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: cachecluster.MapConfigMapName(name)}, &corev1.ConfigMap{}); err != nil {
		return fmt.Errorf("partition map: %w", err)
	}
	sel := client.MatchingLabels{cachecluster.LabelCluster: name}
	var sts appsv1.StatefulSetList
	if err := env.Client.List(ctx, &sts, client.InNamespace(ns), sel); err != nil {
		return err
	}
	components := map[string]bool{}
	for _, s := range sts.Items {
		components[s.Labels[cachecluster.LabelComponent]] = true
	}
	if !components[cachecluster.ComponentStorage] || !components[cachecluster.ComponentCacheNode] {
		return fmt.Errorf("StatefulSets of components %v, want storage and cache nodes", components)
	}
	var nps networkingv1.NetworkPolicyList
	if err := env.Client.List(ctx, &nps, client.InNamespace(ns), sel); err != nil {
		return err
	}
	if len(nps.Items) == 0 {
		return errors.New("no NetworkPolicy")
	}
	return nil
}

// eventually waits until cond returns nil (poll.Eventually's bound).
func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	poll.Eventually(t, what, func() (bool, error) {
		err := cond()
		return err == nil, err
	})
}

// managedSample is the sample CacheCluster with managed storage (storage
// StatefulSets, Services, a NetworkPolicy) in namespace ns.
func managedSample(t *testing.T, ns string) *unstructured.Unstructured {
	t.Helper()
	for _, cc := range sampleCacheClusters(t, ns) {
		if mode, _, _ := unstructured.NestedString(cc.Object, "spec", "storage", "mode"); mode == string(v1alpha1.StorageManaged) {
			return cc
		}
	}
	t.Fatal("config/samples has no CacheCluster with managed storage")
	return nil
}
