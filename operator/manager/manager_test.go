package manager_test

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/internal/testing/kubetest"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/operator/manager"
)

var env *kubetest.Env

func TestMain(m *testing.M) { kubetest.Main(m, &env) }

// eventually waits until cond holds (see poll.Eventually).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Eventually(t, what, func() (bool, error) { return cond(), nil })
}

func condition(conds []metav1.Condition, t v1alpha1.ConditionType) *metav1.Condition {
	return meta.FindStatusCondition(conds, string(t))
}

// TestOperator runs the whole operator with leader election and drives a
// cluster whose layer and fabric arrive after it.
func TestOperator(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- manager.Run(ctx, env.Config, manager.Options{
			MetricsAddr: "0", ProbeAddr: "0", LeaderElection: true, LeaderElectionNamespace: "default",
			SkipNameValidation: true, // -count=N runs the operator N times in one process
		}, logr.Discard())
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("operator: %v", err)
		}
	})
	c := env.Client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "op-"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	eventually(t, "leader lease acquired", func() bool {
		return c.Get(ctx, client.ObjectKey{Namespace: "default", Name: manager.LeaderElectionID}, &coordinationv1.Lease{}) == nil
	})

	// A cluster whose layer does not exist yet: not Ready, says why.
	cc := &v1alpha1.CacheCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: ns.Name},
		Spec:       v1alpha1.CacheClusterSpec{LayerRefs: []string{"spine", "tor"}},
	}
	if err := c.Create(ctx, cc); err != nil {
		t.Fatal(err)
	}
	eventually(t, "LayerNotFound", func() bool {
		_ = c.Get(ctx, client.ObjectKeyFromObject(cc), cc)
		r := condition(cc.Status.Conditions, v1alpha1.ConditionReady)
		return r != nil && r.Status == metav1.ConditionFalse && r.Reason == v1alpha1.ReasonLayerNotFound
	})

	// The layers arrive: a software spine and a switch-backed layer whose
	// fabric is missing, then the fabric.
	spine := &v1alpha1.CacheLayer{ObjectMeta: metav1.ObjectMeta{Name: "spine", Namespace: ns.Name},
		Spec: v1alpha1.CacheLayerSpec{Nodes: ptr.To[int32](2)}}
	tor := &v1alpha1.CacheLayer{ObjectMeta: metav1.ObjectMeta{Name: "tor", Namespace: ns.Name},
		Spec: v1alpha1.CacheLayerSpec{Backend: v1alpha1.BackendSwitch, BoundToRacks: true,
			Switch: &v1alpha1.SwitchLayerSpec{FabricRef: "fabric", Role: v1alpha1.RoleStorageLeaf}}}
	for _, l := range []*v1alpha1.CacheLayer{spine, tor} {
		if err := c.Create(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	// The cluster waits for its fabric.
	eventually(t, "FabricNotFound", func() bool {
		_ = c.Get(ctx, client.ObjectKeyFromObject(cc), cc)
		r := condition(cc.Status.Conditions, v1alpha1.ConditionReady)
		return r != nil && r.Status == metav1.ConditionFalse && r.Reason == v1alpha1.ReasonFabricNotFound
	})
	eventually(t, "tor layer waits for its fabric", func() bool {
		_ = c.Get(ctx, client.ObjectKeyFromObject(tor), tor)
		r := condition(tor.Status.Conditions, v1alpha1.ConditionReady)
		return r != nil && r.Reason == v1alpha1.ReasonFabricNotFound && len(tor.Status.Clusters) == 1
	})
	// The fabric arrives; its switches' P4Runtime ports are loopback ports
	// where nothing listens, so the operator reports them unreachable.
	fabric := &v1alpha1.SwitchFabric{ObjectMeta: metav1.ObjectMeta{Name: "fabric", Namespace: ns.Name},
		Spec: v1alpha1.SwitchFabricSpec{Driver: v1alpha1.DriverStratum, Pipeline: "distcache-v1model", Switches: []v1alpha1.Switch{
			{Name: "tor-0", DeviceID: 1, Role: v1alpha1.RoleStorageLeaf, P4RuntimeAddress: "127.0.0.1:1", Rack: ptr.To[int32](0), DataAddress: "127.0.0.1:2000"},
			{Name: "spine-0", DeviceID: 2, Role: v1alpha1.RoleSpine, P4RuntimeAddress: "127.0.0.1:1"},
		}}}
	if err := c.Create(ctx, fabric); err != nil {
		t.Fatal(err)
	}
	eventually(t, "fabric bound to shop, its switch unreachable", func() bool {
		_ = c.Get(ctx, client.ObjectKeyFromObject(fabric), fabric)
		r := condition(fabric.Status.Conditions, v1alpha1.ConditionReady)
		return r != nil && r.Reason == v1alpha1.ReasonSwitchUnreachable && fabric.Status.Cluster == "shop" &&
			fabric.Status.Switches["storage-leaf"] == 1 && len(fabric.Status.SwitchStatuses) == 1
	})
	// The map holds both layers; the switch is not Ready (no pod runs in
	// this control plane either).
	eventually(t, "cluster map published", func() bool {
		_ = c.Get(ctx, client.ObjectKeyFromObject(cc), cc)
		r := condition(cc.Status.Conditions, v1alpha1.ConditionReady)
		return r != nil && r.Status == metav1.ConditionFalse && r.Reason == v1alpha1.ReasonPodsNotReady &&
			cc.Status.MapVersion >= 1 && cc.Status.ObservedGeneration == cc.Generation
	})
	if cc.Status.LayerCount != 2 || cc.Status.Members != 3 {
		t.Fatalf("status: %d layers, %d members; want 2 layers (one switch-backed), 3 members", cc.Status.LayerCount, cc.Status.Members)
	}
	eventually(t, "tor layer sees its fabric", func() bool {
		_ = c.Get(ctx, client.ObjectKeyFromObject(tor), tor)
		r := condition(tor.Status.Conditions, v1alpha1.ConditionReady)
		return r != nil && r.Status == metav1.ConditionTrue && r.Reason == v1alpha1.ReasonReconciled
	})
	checkMetrics(t, crmetrics.Registry)
}

// checkMetrics runs `promtool check metrics` (Debian's prometheus package;
// `make test` installs it) on what the operator's /metrics serves: the
// registry's exposition, its own series and controller-runtime's.
func checkMetrics(t *testing.T, g prometheus.Gatherer) {
	t.Helper()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not on PATH: `make prometheus` installs it")
	}
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	enc := expfmt.NewEncoder(&text, expfmt.NewFormat(expfmt.TypeTextPlain))
	names := 0
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(f.GetName(), "distcache_operator_") {
			names++
		}
	}
	if names == 0 {
		t.Fatalf("no distcache_operator_ series among %d families", len(families))
	}
	cmd := exec.CommandContext(t.Context(), promtool, "check", "metrics")
	cmd.Stdin = &text
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("promtool check metrics on the operator's metrics: %v\n%s", err, out)
	}
}
