package switchfabric_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/fabric/stratum"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/internal/testing/switchtest"
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

// TestFabricDeletedLeavesNothing: a SwitchFabric deleted while a
// cluster's layer uses it leaves nothing running behind: its fleet stops,
// so the switch's P4Runtime session ends (the switch has no primary) and
// the fleet's metrics are gone, and the cluster reports the missing
// fabric.
func TestFabricDeletedLeavesNothing(t *testing.T) {
	ns := namespace(t)
	target, other := switchtest.StartTarget(t, 1, 1), switchtest.StartTarget(t, 1, 2)
	f := newFabric(t, ns, "fabric", spineSwitch("spine-0", target.P4Runtime, target.Addr().String()),
		spineSwitch("spine-1", other.P4Runtime, other.Addr().String()))
	cc := newCluster(t, ns, "shop", "fabric")
	reg := startOperator(t)
	member := partmap.MemberName("shop", "spine", 0)
	fabricStatus(t, f, "switch programmed", func(s *v1alpha1.SwitchFabricStatus) bool {
		return is(s, v1alpha1.ConditionReady, true, v1alpha1.ReasonReconciled) && len(s.SwitchStatuses) == 2 && s.SwitchStatuses[0].Programmed
	})
	poll.Eventually(t, "fleet metrics exported", func() (bool, error) {
		return series(t, reg, "distcache_fabric_switch_programmed", member) == 1, nil
	})
	if primary, err := hasPrimary(target.P4Runtime); err != nil || !primary {
		t.Fatalf("the switch has no primary while the fleet runs (%v)", err)
	}

	if err := env.Client.Delete(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, "the fleet's session ended: no primary", func() (bool, error) {
		primary, err := hasPrimary(target.P4Runtime)
		return !primary, err
	})
	poll.Eventually(t, "the fleet's metrics gone", func() (bool, error) {
		n, err := testutil.GatherAndCount(reg)
		return n == 0, err
	})
	poll.Eventually(t, "the cluster reports the fabric missing", func() (bool, error) {
		stored := &v1alpha1.CacheCluster{}
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(cc), stored); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(stored.Status.Conditions, string(v1alpha1.ConditionReady))
		return c != nil && c.Reason == v1alpha1.ReasonFabricNotFound, nil
	})
}
