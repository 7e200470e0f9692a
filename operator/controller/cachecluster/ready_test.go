package cachecluster_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/operator/controller/cachecluster"
)

// TestReadyWaitsForPods checks what `kubectl wait --for=condition=Ready`,
// run for real against the API server, sees: a cluster whose map is
// published but whose pods are missing is not Ready; it is not Ready either
// with its members' pods Ready and its shards' missing; it is Ready once
// every member and shard pod is, and a shard that then stops being Ready
// makes it Degraded and not Ready, for that reason.
func TestReadyWaitsForPods(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	startOperator(t, clk)
	cc := newCluster(t, "ready", withStorage(v1alpha1.StorageManaged, 1, 2), withLayer("spine", 2, false))
	kubectl, kubeconfig, err := env.Kubectl(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	wait := func(ctx context.Context, timeout string) (string, error) {
		out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", kubeconfig, "-n", cc.Namespace,
			"wait", "--for=condition=Ready", "cacheclusters.distcache.io/"+cc.Name, "--timeout="+timeout).CombinedOutput()
		return string(out), err
	}
	condition := func(ct v1alpha1.ConditionType) *metav1.Condition {
		stored := &v1alpha1.CacheCluster{}
		if err := get(t, stored, cc.Namespace, cc.Name); err != nil {
			return nil
		}
		return meta.FindStatusCondition(stored.Status.Conditions, string(ct))
	}
	isFalse := func(c *metav1.Condition, reason string) bool {
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == reason
	}

	eventually(t, "map published, not Ready: no pod runs", func() (bool, error) {
		m, err := publishedMap(t, cc)
		return err == nil && m.Version == 1 && isFalse(condition(v1alpha1.ConditionReady), v1alpha1.ReasonPodsNotReady), err
	})
	if out, err := wait(t.Context(), "1s"); err == nil {
		t.Fatalf("kubectl wait returned while no pod runs:\n%s", out)
	}
	waited := make(chan error, 1)
	go func() {
		out, err := wait(context.WithoutCancel(t.Context()), "2m")
		if err != nil {
			err = &waitError{err, out}
		}
		waited <- err
	}()

	now := clk.Now()
	for _, name := range []string{"ready-spine-0", "ready-spine-1"} {
		setPodReady(t, cc, name, true, now.Add(-time.Hour))
	}
	eventually(t, "members Ready, shards missing: not Ready", func() (bool, error) {
		c := condition(v1alpha1.ConditionReady)
		return isFalse(c, v1alpha1.ReasonPodsNotReady) && strings.Contains(c.Message, "2 of 2 members ready, 0 of 2 storage shards ready"), nil
	})
	select {
	case err := <-waited:
		t.Fatalf("kubectl wait returned (%v) while the shards' pods are missing", err)
	default:
	}

	for _, name := range []string{"ready-rack-0-0", "ready-rack-0-1"} {
		setPodReady(t, cc, name, true, now.Add(-time.Hour))
	}
	if err := <-waited; err != nil {
		t.Fatalf("kubectl wait: %v", err)
	}
	if d := condition(v1alpha1.ConditionDegraded); d == nil || d.Status != metav1.ConditionFalse {
		t.Fatalf("Degraded = %+v, want False", d)
	}
	eventually(t, "a ClusterReady event", func() (bool, error) {
		return hasEvent(t, cc, cachecluster.EventClusterReady, "2 of 2 storage shards ready")
	})

	setPodReady(t, cc, "ready-rack-0-1", false, now)
	eventually(t, "a shard lost: Degraded, not Ready", func() (bool, error) {
		d := condition(v1alpha1.ConditionDegraded)
		return d != nil && d.Status == metav1.ConditionTrue && d.Reason == v1alpha1.ReasonShardsNotReady &&
			isFalse(condition(v1alpha1.ConditionReady), v1alpha1.ReasonShardsNotReady), nil
	})
	for _, reason := range []string{cachecluster.EventClusterDegraded, cachecluster.EventClusterNotReady} {
		eventually(t, "a "+reason+" event", func() (bool, error) { return hasEvent(t, cc, reason, "1 of 2 storage shards") })
	}
}

// waitError is a failed kubectl wait and what it printed.
type waitError struct {
	err error
	out string
}

func (e *waitError) Error() string { return e.err.Error() + ": " + e.out }

// TestReadyThroughRemap: a Ready cluster stays Ready while a member's pod
// is not Ready, while the member is fenced and while it is failed, its
// keys remapped: Ready's reason is Serving, Degraded says MembersFenced,
// then MembersFailed, and no ClusterNotReady event is recorded. Once the
// member is restored the cluster is Ready for reason Reconciled again.
// Each of the three map versions makes a Remapped event.
func TestReadyThroughRemap(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	startOperator(t, clk)
	cc := newCluster(t, "remap", withStorage(v1alpha1.StorageManaged, 1, 1), withLayer("spine", 3, false))
	stored := &v1alpha1.CacheCluster{}
	conditions := func(ready bool, readyReason string, degraded bool, degradedReason string) func() (bool, error) {
		return func() (bool, error) {
			if err := get(t, stored, cc.Namespace, cc.Name); err != nil {
				return false, err
			}
			r := meta.FindStatusCondition(stored.Status.Conditions, string(v1alpha1.ConditionReady))
			d := meta.FindStatusCondition(stored.Status.Conditions, string(v1alpha1.ConditionDegraded))
			return r != nil && d != nil && (r.Status == metav1.ConditionTrue) == ready && r.Reason == readyReason &&
				(d.Status == metav1.ConditionTrue) == degraded && d.Reason == degradedReason, nil
		}
	}
	now := clk.Now()
	for _, name := range []string{"remap-spine-0", "remap-spine-1", "remap-spine-2", "remap-rack-0-0"} {
		setPodReady(t, cc, name, true, now.Add(-time.Hour))
	}
	eventually(t, "Ready", conditions(true, v1alpha1.ReasonReconciled, false, v1alpha1.ReasonReconciled))

	victim := "remap-spine-1"
	setPodReady(t, cc, victim, false, now.Add(-10*time.Second))
	eventually(t, "a member not Ready: still Ready, Serving", conditions(true, v1alpha1.ReasonServing, false, v1alpha1.ReasonReconciled))
	if p := meta.FindStatusCondition(stored.Status.Conditions, string(v1alpha1.ConditionProgressing)); p == nil || p.Status != metav1.ConditionTrue {
		t.Errorf("Progressing %+v, want True while a member's pod is not Ready", p)
	}
	setPodReady(t, cc, victim, false, now.Add(-29*time.Second))
	eventually(t, "fenced: still Ready, Degraded", conditions(true, v1alpha1.ReasonServing, true, v1alpha1.ReasonMembersFenced))
	if m, err := publishedMap(t, cc); err != nil || memberState(m, victim) != "Fenced" {
		t.Fatalf("member %s not fenced in the map (%v)", victim, err)
	}
	setPodReady(t, cc, victim, false, now.Add(-31*time.Second))
	eventually(t, "failed: still Ready, Degraded", conditions(true, v1alpha1.ReasonServing, true, v1alpha1.ReasonMembersFailed))
	if m, err := publishedMap(t, cc); err != nil || memberState(m, victim) != "Failed" || m.Version != 3 {
		t.Fatalf("member %s not failed in map v3 (%v)", victim, err)
	}
	if c := meta.FindStatusCondition(stored.Status.Conditions, string(v1alpha1.ConditionReady)); !strings.Contains(c.Message, "0 fenced and 1 failed members remapped") {
		t.Errorf("Ready's message %q does not count the failed member", c.Message)
	}

	setPodReady(t, cc, victim, true, now.Add(-61*time.Second))
	eventually(t, "restored: Ready, not Degraded", conditions(true, v1alpha1.ReasonReconciled, false, v1alpha1.ReasonReconciled))
	// One Remapped event per version, naming both versions and the change.
	for _, note := range []string{"v2 replaces v1: remap-spine-1 Active to Fenced", "v3 replaces v2: remap-spine-1 Fenced to Failed",
		"v4 replaces v3: remap-spine-1 Failed to Active"} {
		eventually(t, "Remapped event: "+note, func() (bool, error) { return hasEvent(t, cc, cachecluster.EventRemapped, note) })
	}
	eventually(t, "ClusterRecovered event", func() (bool, error) { return hasEvent(t, cc, cachecluster.EventClusterRecovered, "") })
	if found, err := hasEvent(t, cc, cachecluster.EventClusterNotReady, ""); err != nil || found {
		t.Errorf("a ClusterNotReady event during the remap (%v)", err)
	}
}
