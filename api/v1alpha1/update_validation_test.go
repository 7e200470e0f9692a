package v1alpha1_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/api/v1alpha1"
)

// Messages of the transition rules (they compare an update with the object
// it replaces).
const (
	msgPersistenceFixed   = "storage.persistence cannot be added or removed once the cluster exists: the volume claims of a StatefulSet cannot change"
	msgModeFixed          = "storage.mode cannot change once the cluster exists"
	msgRacksFixed         = "storage.racks cannot change once the cluster exists: it decides which shard stores each key"
	msgShardsPerRackFixed = "storage.shardsPerRack cannot change once the cluster exists: it decides which shard stores each key"
	msgHashSeedFixed      = "hashSeed cannot be set, changed or removed once the layer exists"
	msgHashTagsFixed      = "storage.hashTags cannot change once the cluster exists: it decides which shard stores each key with a hash tag"
)

// storage changes a cluster's storage spec.
func storage(f func(*v1alpha1.StorageSpec)) func(*v1alpha1.CacheClusterSpec) {
	return func(s *v1alpha1.CacheClusterSpec) { f(&s.Storage) }
}

// firstLayer changes a cluster's first inline layer.
func firstLayer(f func(*v1alpha1.CacheLayerSpec)) func(*v1alpha1.CacheClusterSpec) {
	return func(s *v1alpha1.CacheClusterSpec) { f(&s.Layers[0].CacheLayerSpec) }
}

// TestUpdateRules creates a CacheCluster, changes it as a kubectl apply
// would (a merge patch) and checks that the API server refuses exactly the
// changes a transition rule forbids, with the rule's message on the field
// it guards.
func TestUpdateRules(t *testing.T) {
	twoRacks := withStorage(func(s *v1alpha1.StorageSpec) { s.Racks, s.ShardsPerRack = 2, 2 })
	seeded := withLayers(newLayer("spine", withHashSeed(7)))
	tests := []struct {
		name      string
		created   *v1alpha1.CacheCluster
		change    func(*v1alpha1.CacheClusterSpec)
		wantField string // "": accepted
		wantMsg   string
	}{
		{"persistence removed", newCluster(withStorage(func(s *v1alpha1.StorageSpec) { s.Persistence = persistence() })),
			storage(func(s *v1alpha1.StorageSpec) { s.Persistence = nil }), "spec.storage", msgPersistenceFixed},
		{"persistence added", newCluster(),
			storage(func(s *v1alpha1.StorageSpec) { s.Persistence = persistence() }), "spec.storage", msgPersistenceFixed},
		{"appendOnly changed with persistence", newCluster(withStorage(func(s *v1alpha1.StorageSpec) { s.Persistence = persistence() })),
			storage(func(s *v1alpha1.StorageSpec) { s.AppendOnly = v1alpha1.AppendOnlyAlways }), "", ""},
		{"appendOnly disabled without persistence", newCluster(),
			storage(func(s *v1alpha1.StorageSpec) { s.AppendOnly = v1alpha1.AppendOnlyDisabled }), "", ""},
		{"racks changed", newCluster(twoRacks),
			storage(func(s *v1alpha1.StorageSpec) { s.Racks = 3 }), "spec.storage", msgRacksFixed},
		{"shardsPerRack changed", newCluster(twoRacks),
			storage(func(s *v1alpha1.StorageSpec) { s.ShardsPerRack = 1 }), "spec.storage", msgShardsPerRackFixed},
		{"hashTags turned on", newCluster(),
			storage(func(s *v1alpha1.StorageSpec) { s.HashTags = true }), "spec.storage", msgHashTagsFixed},
		{"hashTags turned off", newCluster(withStorage(func(s *v1alpha1.StorageSpec) { s.HashTags = true })),
			storage(func(s *v1alpha1.StorageSpec) { s.HashTags = false }), "spec.storage", msgHashTagsFixed},
		{"racks set to the default it had", newCluster(),
			storage(func(s *v1alpha1.StorageSpec) { s.Racks = 1 }), "", ""},
		{"mode changed", newCluster(),
			storage(func(s *v1alpha1.StorageSpec) {
				s.Mode, s.External = v1alpha1.StorageExternal, []string{"redis-0.example:6379"}
			}), "spec.storage", msgModeFixed},
		{"mode set to the default it had", newCluster(),
			storage(func(s *v1alpha1.StorageSpec) { s.Mode = v1alpha1.StorageManaged }), "", ""},
		{"external endpoint moved", newCluster(withStorage(func(s *v1alpha1.StorageSpec) {
			s.Mode, s.External = v1alpha1.StorageExternal, []string{"redis-0.example:6379"}
		})), storage(func(s *v1alpha1.StorageSpec) { s.External = []string{"redis-0.other.example:6379"} }), "", ""},
		{"layer hashSeed changed", newCluster(seeded),
			firstLayer(func(l *v1alpha1.CacheLayerSpec) { l.HashSeed = ptr.To[int64](8) }), "spec.layers[0]", msgHashSeedFixed},
		{"layer hashSeed removed", newCluster(seeded),
			firstLayer(func(l *v1alpha1.CacheLayerSpec) { l.HashSeed = nil }), "spec.layers[0]", msgHashSeedFixed},
		{"layer hashSeed set", newCluster(),
			firstLayer(func(l *v1alpha1.CacheLayerSpec) { l.HashSeed = ptr.To[int64](8) }), "spec.layers[0]", msgHashSeedFixed},
		{"layer scaled", newCluster(seeded),
			firstLayer(func(l *v1alpha1.CacheLayerSpec) { l.Nodes = ptr.To[int32](5) }), "", ""},
		{"a layer added next to a seeded one", newCluster(seeded),
			func(s *v1alpha1.CacheClusterSpec) { s.Layers = append(s.Layers, newLayer("leaf", withHashSeed(9))) }, "", ""},
		// The stored gateway.replicas is the default 1: a cluster switches
		// to a DaemonSet by its mode alone.
		{"gateway switched to a DaemonSet on the host network", newCluster(),
			func(s *v1alpha1.CacheClusterSpec) {
				s.Gateway.Mode, s.Gateway.HostNetwork = v1alpha1.GatewayDaemonSet, true
			}, "", ""},
		{"gateway switched to a DaemonSet with replicas 2", newCluster(withGateway(func(g *v1alpha1.GatewaySpec) { g.Replicas = ptr.To[int32](2) })),
			func(s *v1alpha1.CacheClusterSpec) { s.Gateway.Mode = v1alpha1.GatewayDaemonSet }, "spec.gateway", msgDaemonSetScale},
		{"gateway back to a Deployment on the host network", newCluster(withGateway(daemonSetGateway(true))),
			func(s *v1alpha1.CacheClusterSpec) { s.Gateway.Mode = v1alpha1.GatewayDeployment }, "spec.gateway", msgHostNetworkMode},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := create(t, tc.created); err != nil {
				t.Fatalf("Create: %v", err)
			}
			t.Cleanup(func() { _ = env.Client.Delete(context.Background(), tc.created) })
			changed := tc.created.DeepCopy()
			tc.change(&changed.Spec)
			checkPatch(t, changed, tc.created, tc.wantField, tc.wantMsg)
		})
	}
}

// TestCacheLayerHashSeedFixed checks the hashSeed rule on a CacheLayer
// object, whose spec is the inline layers' type.
func TestCacheLayerHashSeedFixed(t *testing.T) {
	created := newCacheLayer(withHashSeed(7))
	if err := create(t, created); err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), created) })
	changed := created.DeepCopy()
	changed.Spec.HashSeed = ptr.To[int64](8)
	checkPatch(t, changed, created, "spec", msgHashSeedFixed)
	scaled := created.DeepCopy()
	scaled.Spec.Nodes = ptr.To[int32](6)
	checkPatch(t, scaled, created, "", "")
}

// checkPatch merge-patches from into changed and checks the API server
// accepts it (wantField "") or refuses it with one cause on wantField
// whose message has wantMsg.
func checkPatch(t *testing.T, changed, from client.Object, wantField, wantMsg string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	err := env.Client.Patch(ctx, changed, client.MergeFrom(from))
	if wantField == "" {
		if err != nil {
			t.Fatalf("Patch: %v, want it accepted", err)
		}
		return
	}
	cs := invalidCauses(t, err)
	if len(cs) != 1 || cs[0].Field != wantField || !strings.Contains(cs[0].Message, wantMsg) {
		t.Fatalf("Patch: got %v (causes %+v), want only %s: %q", err, cs, wantField, wantMsg)
	}
}
