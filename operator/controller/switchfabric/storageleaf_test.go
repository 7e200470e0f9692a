package switchfabric_test

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/internal/testing/switchtest"
	"github.com/distcache/distcache/placement/partmap"
)

// storageLeafSwitch adds the storage-leaf switch of rack at the given
// P4Runtime and data addresses.
func storageLeafSwitch(name string, rack int32, p4rt, data string) fabricOption {
	return func(f *v1alpha1.SwitchFabric) {
		f.Spec.Switches = append(f.Spec.Switches, v1alpha1.Switch{Name: name, DeviceID: int64(len(f.Spec.Switches) + 1),
			Role: v1alpha1.RoleStorageLeaf, Rack: ptr.To(rack), P4RuntimeAddress: p4rt, GNMIAddress: p4rt, DataAddress: data})
	}
}

// newLeafCluster creates a CacheCluster of 2 racks of one shard whose
// spine is fabric's spine switches and whose leaf layer, bound to the
// racks, is its storage-leaf switches; its failover acts within a second.
func newLeafCluster(t *testing.T, ns, name, fabric string) *v1alpha1.CacheCluster {
	t.Helper()
	cc := &v1alpha1.CacheCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1alpha1.CacheClusterSpec{
		Storage: v1alpha1.StorageSpec{Mode: v1alpha1.StorageManaged, Racks: 2, ShardsPerRack: 1},
		Layers: []v1alpha1.NamedLayer{
			{Name: "spine", CacheLayerSpec: v1alpha1.CacheLayerSpec{Backend: v1alpha1.BackendSwitch,
				Switch: &v1alpha1.SwitchLayerSpec{FabricRef: fabric, Role: v1alpha1.RoleSpine}}},
			{Name: "leaf", CacheLayerSpec: v1alpha1.CacheLayerSpec{Backend: v1alpha1.BackendSwitch, BoundToRacks: true,
				Switch: &v1alpha1.SwitchLayerSpec{FabricRef: fabric, Role: v1alpha1.RoleStorageLeaf}}},
		},
		Failover: v1alpha1.FailoverSpec{GracePeriod: &metav1.Duration{Duration: 500 * 1e6}, HoldDown: &metav1.Duration{Duration: 1e9}},
	}}
	if err := env.Client.Create(context.Background(), cc); err != nil {
		t.Fatal(err)
	}
	return cc
}

// switchStatus is the named switch's status in s (zero if absent).
func switchStatus(s *v1alpha1.SwitchFabricStatus, name string) v1alpha1.SwitchStatus {
	for _, ss := range s.SwitchStatuses {
		if ss.Name == name {
			return ss
		}
	}
	return v1alpha1.SwitchStatus{}
}

// rackKeys are keys the map stores in rack.
func rackKeys(p *partmap.Placement, rack int) []string {
	var keys []string
	for i := range 200 {
		key := fmt.Sprintf("key-%d", i)
		if r, _ := p.Shard(key); r == rack {
			keys = append(keys, key)
		}
	}
	return keys
}

// TestOperatorProgramsAStorageLeafLayer: the operator drives a cluster's
// storage-leaf layer, a software switch per rack (real P4Runtime and gNMI
// targets on loopback) under a switch spine. The switches enter the
// partition map bound to their racks — by their rack, not their order in
// the fabric — and are programmed and their leases renewed; rack 0's
// switch, stopped, is failed over (the map places rack 0's keys on rack
// 1's switch) and, restarted, programmed again and restored with its rack.
func TestOperatorProgramsAStorageLeafLayer(t *testing.T) {
	ns := namespace(t)
	spine := switchtest.StartTarget(t, 2, 1)
	tor0, tor1 := switchtest.StartTarget(t, 2, 3), switchtest.StartTarget(t, 2, 2)
	f := newFabric(t, ns, "fabric", spineSwitch("spine-0", spine.P4Runtime, spine.Addr().String()),
		storageLeafSwitch("tor-1", 1, tor1.P4Runtime, tor1.Addr().String()),
		storageLeafSwitch("tor-0", 0, tor0.P4Runtime, tor0.Addr().String()))
	cc := newLeafCluster(t, ns, "shop", "fabric")
	member0, member1 := partmap.MemberName("shop", "leaf", 0), partmap.MemberName("shop", "leaf", 1)
	reg := startOperator(t)

	fabricStatus(t, f, "fabric Ready, its three switches programmed for shop", func(s *v1alpha1.SwitchFabricStatus) bool {
		t0, t1 := switchStatus(s, "tor-0"), switchStatus(s, "tor-1")
		return is(s, v1alpha1.ConditionReady, true, v1alpha1.ReasonReconciled) && s.Cluster == "shop" && s.Switches["storage-leaf"] == 2 &&
			switchStatus(s, "spine-0").Programmed && t0.Programmed && t0.Member == member0 && t1.Programmed && t1.Member == member1
	})
	// leafPlacement is the published map's placement and its leaf layer.
	leafPlacement := func() (*partmap.Placement, int, error) {
		m, err := publishedMap(cc)
		if err != nil {
			return nil, 0, err
		}
		p, err := partmap.Compile(m)
		if err != nil {
			return nil, 0, err
		}
		l, _, ok := m.Member(member0)
		if !ok {
			return nil, 0, fmt.Errorf("map version %d has no member %s", m.Version, member0)
		}
		return p, l, nil
	}
	poll.Eventually(t, "storage-leaf switches in the map, bound to their racks at their dataAddress, Active", func() (bool, error) {
		p, l, err := leafPlacement()
		if err != nil {
			return false, err
		}
		layer := p.Map().Layers[l]
		for r, tor := range []*switchtest.Target{tor0, tor1} {
			mb := layer.Members[r]
			if mb.Rack != partmap.RackName(r) || mb.Address != tor.Addr().String() || mb.State != partmap.Active || p.RackMember(l, r) != r {
				return false, fmt.Errorf("rack %d: member %+v, rack member %d", r, mb, p.RackMember(l, r))
			}
		}
		return layer.Switch && layer.BoundToRacks, nil
	})
	for name, tor := range map[string]*switchtest.Target{"tor-0": tor0, "tor-1": tor1} {
		poll.Eventually(t, name+"'s lease renewed from the map's ConfigMap", func() (bool, error) {
			until, err := leaseUntil(tor.Switch())
			return until > 0, err
		})
	}
	poll.Eventually(t, "fleet metrics: storage-leaf switches programmed, leases renewed", func() (bool, error) {
		for _, m := range []string{member0, member1} {
			if series(t, reg, "distcache_fabric_switch_programmed", m) != 1 || series(t, reg, "distcache_fabric_lease_renewals_total", m) <= 0 {
				return false, nil
			}
		}
		return true, nil
	})

	// Rack 0's switch stops answering: failed over, its rack's keys on
	// rack 1's switch, whose lease is still renewed.
	tor0.Stop()
	fabricStatus(t, f, "tor-0 unreachable", func(s *v1alpha1.SwitchFabricStatus) bool {
		t0 := switchStatus(s, "tor-0")
		return !t0.Programmed && t0.Reason == v1alpha1.ReasonSwitchUnreachable && switchStatus(s, "tor-1").Programmed
	})
	poll.Eventually(t, "tor-0 failed, rack 0's keys on tor-1", func() (bool, error) {
		p, l, err := leafPlacement()
		if err != nil {
			return false, err
		}
		if st := p.Map().Layers[l].Members[0].State; st != partmap.Failed || p.RackMember(l, 0) != -1 {
			return false, fmt.Errorf("tor-0 %s, rack 0's member %d", st, p.RackMember(l, 0))
		}
		keys := rackKeys(p, 0)
		for _, key := range keys {
			if o := p.Owner(l, key); o != 1 {
				return false, fmt.Errorf("%s of rack 0 on leaf member %d", key, o)
			}
		}
		return len(keys) > 0, nil
	})
	before := series(t, reg, "distcache_fabric_lease_renewals_total", member1)
	poll.Eventually(t, "tor-1's lease renewed while tor-0 is failed", func() (bool, error) {
		until, err := leaseUntil(tor1.Switch())
		return until > 0 && series(t, reg, "distcache_fabric_lease_renewals_total", member1) > before, err
	})

	// It comes back empty: programmed in a new session, restored with its
	// rack after the hold-down, its lease renewed.
	if err := tor0.Restart(); err != nil {
		t.Fatal(err)
	}
	fabricStatus(t, f, "tor-0 programmed again", func(s *v1alpha1.SwitchFabricStatus) bool {
		t0 := switchStatus(s, "tor-0")
		return is(s, v1alpha1.ConditionReady, true, v1alpha1.ReasonReconciled) && t0.Programmed && t0.Sessions == 2
	})
	poll.Eventually(t, "tor-0 restored, rack 0's keys back on it", func() (bool, error) {
		p, l, err := leafPlacement()
		if err != nil {
			return false, err
		}
		if st := p.Map().Layers[l].Members[0].State; st != partmap.Active || p.RackMember(l, 0) != 0 {
			return false, fmt.Errorf("tor-0 %s, rack 0's member %d", st, p.RackMember(l, 0))
		}
		for _, key := range rackKeys(p, 0) {
			if o := p.Owner(l, key); o != 0 {
				return false, fmt.Errorf("%s of rack 0 on leaf member %d", key, o)
			}
		}
		return true, nil
	})
	poll.Eventually(t, "lease renewed on the restarted tor-0", func() (bool, error) {
		until, err := leaseUntil(tor0.Switch())
		return until > 0, err
	})

	// The cluster goes: the fleet stops, and leaves the switches (and
	// their ports, which later tests' switches may get) alone.
	if err := env.Client.Delete(context.Background(), cc); err != nil {
		t.Fatal(err)
	}
	fabricStatus(t, f, "not in use", func(s *v1alpha1.SwitchFabricStatus) bool {
		return is(s, v1alpha1.ConditionReady, false, v1alpha1.ReasonNotInUse) && len(s.SwitchStatuses) == 0
	})
}
