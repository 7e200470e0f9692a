package v1alpha1_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/distcache/distcache/operator/api/v1alpha1"
)

// Messages of the transition rules (they compare an update with the object
// it replaces).
const msgPersistenceFixed = "storage.persistence cannot be added or removed once the cluster exists: the volume claims of a StatefulSet cannot change"

// TestUpdateRules creates a CacheCluster, changes it as a kubectl apply
// would (a merge patch) and checks that the API server refuses exactly the
// changes a transition rule forbids.
func TestUpdateRules(t *testing.T) {
	tests := []struct {
		name    string
		created *v1alpha1.CacheCluster
		change  func(*v1alpha1.StorageSpec)
		wantMsg string // "": accepted
	}{
		{"persistence removed", newCluster(withStorage(func(s *v1alpha1.StorageSpec) { s.Persistence = persistence() })),
			func(s *v1alpha1.StorageSpec) { s.Persistence = nil }, msgPersistenceFixed},
		{"persistence added", newCluster(),
			func(s *v1alpha1.StorageSpec) { s.Persistence = persistence() }, msgPersistenceFixed},
		{"appendOnly changed with persistence", newCluster(withStorage(func(s *v1alpha1.StorageSpec) { s.Persistence = persistence() })),
			func(s *v1alpha1.StorageSpec) { s.AppendOnly = v1alpha1.AppendOnlyAlways }, ""},
		{"appendOnly disabled without persistence", newCluster(),
			func(s *v1alpha1.StorageSpec) { s.AppendOnly = v1alpha1.AppendOnlyDisabled }, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := create(t, tc.created); err != nil {
				t.Fatalf("Create: %v", err)
			}
			t.Cleanup(func() { _ = env.Client.Delete(context.Background(), tc.created) })
			changed := tc.created.DeepCopy()
			tc.change(&changed.Spec.Storage)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			err := env.Client.Patch(ctx, changed, client.MergeFrom(tc.created))
			if tc.wantMsg == "" {
				if err != nil {
					t.Fatalf("Patch: %v, want it accepted", err)
				}
				return
			}
			cs := invalidCauses(t, err)
			if len(cs) != 1 || cs[0].Field != "spec.storage" || !strings.Contains(cs[0].Message, tc.wantMsg) {
				t.Fatalf("Patch: got %v (causes %+v), want only spec.storage: %q", err, cs, tc.wantMsg)
			}
		})
	}
}
