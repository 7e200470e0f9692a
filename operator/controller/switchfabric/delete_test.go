package switchfabric_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/fabric/stratum"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/operator/controller/cachecluster"
	"github.com/distcache/distcache/operator/controller/switchfabric"
	"github.com/distcache/distcache/placement/partmap"
)

// hasPrimary asks the switch at addr, as a backup-only controller,
// whether a controller is its primary.
func hasPrimary(addr string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := stratum.Open(ctx, stratum.Config{Address: addr, DeviceID: 1, ElectionID: 99})
	if err != nil {
		return false, err
	}
	defer c.Close()
	_, any, _ := c.Primary()
	return any, nil
}

// withLeafLayer adds a software layer bound to the racks: what of a
// cluster stays when its switch layer leaves.
func withLeafLayer(cc *v1alpha1.CacheCluster) {
	cc.Spec.Layers = append(cc.Spec.Layers, v1alpha1.NamedLayer{Name: "leaf", CacheLayerSpec: v1alpha1.CacheLayerSpec{BoundToRacks: true}})
}

// remaps returns the versions of cc's Remapped events whose note has
// every one of texts, in no order.
func remaps(cc *v1alpha1.CacheCluster, texts ...string) ([]int64, error) {
	var evs eventsv1.EventList
	if err := env.Client.List(context.Background(), &evs, client.InNamespace(cc.Namespace)); err != nil {
		return nil, err
	}
	var out []int64
	for _, e := range evs.Items {
		if e.Reason != cachecluster.EventRemapped || e.Regarding.Name != cc.Name {
			continue
		}
		all := true
		for _, text := range texts {
			all = all && strings.Contains(e.Note, text)
		}
		var v int64
		if _, err := fmt.Sscanf(e.Note, "partition map v%d", &v); all && err == nil {
			out = append(out, v)
		}
	}
	return out, nil
}

// waitLeft waits until cc's map has no spine layer and the leaf layer
// remains, and checks the order of the remaps: the spine's switches
// fenced in one version, the layer removed in a later one.
func waitLeft(t *testing.T, cc *v1alpha1.CacheCluster) {
	t.Helper()
	poll.Eventually(t, "the spine layer left the map", func() (bool, error) {
		m, err := publishedMap(cc)
		if err != nil {
			return false, err
		}
		names := ""
		for _, l := range m.Layers {
			names += l.Name + " "
		}
		return names == "leaf ", nil
	})
	var fenced, removed []int64
	poll.Eventually(t, "the remaps recorded", func() (bool, error) {
		var err error
		if fenced, err = remaps(cc, "shop-spine-0 Active to Fenced", "shop-spine-1 Active to Fenced"); err != nil {
			return false, err
		}
		removed, err = remaps(cc, "layer spine removed")
		return len(fenced) == 1 && len(removed) == 1, err
	})
	if fenced[0] >= removed[0] {
		t.Errorf("the switches were fenced in v%d and removed in v%d: want fenced first", fenced[0], removed[0])
	}
}

// degradedByFabric waits until cc says Degraded for its fabric and has
// reconciled its latest generation.
func degradedByFabric(t *testing.T, cc *v1alpha1.CacheCluster) {
	t.Helper()
	poll.Eventually(t, "the cluster reports its fabric gone", func() (bool, error) {
		stored := &v1alpha1.CacheCluster{}
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(cc), stored); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(stored.Status.Conditions, string(v1alpha1.ConditionDegraded))
		return stored.Status.ObservedGeneration == stored.Generation && c != nil && c.Status == metav1.ConditionTrue &&
			c.Reason == v1alpha1.ReasonFabricNotFound && strings.Contains(c.Message, "layer spine"), nil
	})
}

// TestFabricDeletedLeavesTheMap: a SwitchFabric deleted while a cluster's
// layer uses it is held by its finalizer while the cluster fences its
// switches — the fleet applies that map, releasing every cached key and
// writing no lease — and then removes them from the map; then the fleet
// stops (its P4Runtime session ends and its metrics are gone), the fabric
// is gone, and the cluster goes on reconciling its other layer, Degraded.
func TestFabricDeletedLeavesTheMap(t *testing.T) {
	target, f, cc := twoSpines(t, namespace(t), withLeafLayer)
	reg := startOperator(t)
	member := partmap.MemberName("shop", "spine", 0)
	fabricStatus(t, f, "switch programmed", func(s *v1alpha1.SwitchFabricStatus) bool {
		return is(s, v1alpha1.ConditionReady, true, v1alpha1.ReasonReconciled) && len(s.SwitchStatuses) == 2 && s.SwitchStatuses[0].Programmed
	})
	poll.Eventually(t, "the switch leased", func() (bool, error) {
		until, err := leaseUntil(target.Switch())
		return until > 0, err
	})
	if !controllerutil.ContainsFinalizer(f, switchfabric.Finalizer) {
		t.Fatalf("finalizers %v, want %s", f.Finalizers, switchfabric.Finalizer)
	}
	if primary, err := hasPrimary(target.P4Runtime); err != nil || !primary {
		t.Fatalf("the switch has no primary while the fleet runs (%v)", err)
	}

	if err := env.Client.Delete(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	waitLeft(t, cc)
	poll.Eventually(t, "the fabric gone", func() (bool, error) {
		err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(f), &v1alpha1.SwitchFabric{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	poll.Eventually(t, "the fleet's session ended: no primary", func() (bool, error) {
		primary, err := hasPrimary(target.P4Runtime)
		return !primary, err
	})
	if until, err := leaseUntil(target.Switch()); err != nil || until != 0 {
		t.Errorf("the switch's lease after the fleet stopped: %d (%v), want 0: the fleet applied the map that fenced it", until, err)
	}
	poll.Eventually(t, "the fleet's metrics gone", func() (bool, error) {
		return series(t, reg, "distcache_fabric_switch_programmed", member) == -1, nil
	})
	degradedByFabric(t, cc)
}

// TestFabricGoneLeavesTheMap: a SwitchFabric that went while the
// operator was down, its finalizer removed by hand, leaves the map the
// same way: the operator fences the switches the map holds, then
// removes them.
func TestFabricGoneLeavesTheMap(t *testing.T) {
	_, f, cc := twoSpines(t, namespace(t), withLeafLayer)
	op := runOperator(t)
	fabricStatus(t, f, "switch programmed", func(s *v1alpha1.SwitchFabricStatus) bool {
		return is(s, v1alpha1.ConditionReady, true, v1alpha1.ReasonReconciled) && len(s.SwitchStatuses) == 2 && s.SwitchStatuses[1].Programmed
	})
	poll.Eventually(t, "both switches active in the map", func() (bool, error) {
		a, err := memberState(cc, "shop-spine-0")
		b, err2 := memberState(cc, "shop-spine-1")
		return a == partmap.Active && b == partmap.Active, errors.Join(err, err2)
	})
	op.stop()

	if err := env.Client.Delete(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	stored := &v1alpha1.SwitchFabric{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(f), stored); err != nil {
		t.Fatal(err)
	}
	stored.Finalizers = nil
	if err := env.Client.Update(context.Background(), stored); err != nil {
		t.Fatal(err)
	}
	startOperator(t)
	waitLeft(t, cc)
	degradedByFabric(t, cc)
}
