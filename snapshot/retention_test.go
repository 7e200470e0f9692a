package snapshot_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/distcache/distcache/snapshot"
)

// writeSet writes a set directory with only a manifest, of cluster,
// finished at t.
func writeSet(t *testing.T, root, cluster string, t0 time.Time) string {
	t.Helper()
	dir := filepath.Join(root, snapshot.SetName(cluster, t0))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	m := snapshot.Manifest{Format: snapshot.FormatVersion, Cluster: cluster, Racks: 1, ShardsPerRack: 1, Started: t0, Finished: t0,
		Shards: []snapshot.ShardFile{{Name: cluster + "-rack-0-0", File: cluster + "-rack-0-0.rdb"}}}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, snapshot.ManifestFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return filepath.Base(dir)
}

// TestPrune keeps the newest sets of one cluster and touches neither
// another cluster's sets, nor a partial set, nor a directory without a
// manifest.
func TestPrune(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 7, d, 3, 0, 0, 0, time.UTC) }
	for _, tc := range []struct {
		name       string
		keep       int
		wantPruned []string
	}{
		{"keep 2 of 3", 2, []string{"shop-20260701T030000Z"}},
		{"keep 1 of 3", 1, []string{"shop-20260701T030000Z", "shop-20260702T030000Z"}},
		{"keep 3 of 3", 3, nil},
		{"keep 0: all", 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for d := 1; d <= 3; d++ {
				writeSet(t, root, "shop", day(d))
			}
			other := writeSet(t, root, "shop-eu", day(1)) // a cluster whose name starts like shop's
			for _, d := range []string{"shop-20260630T030000Z.partial", "shop-notaset"} {
				if err := os.Mkdir(filepath.Join(root, d), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			pruned, err := snapshot.Prune(root, "shop", tc.keep)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, p := range pruned {
				names = append(names, filepath.Base(p))
			}
			if !slices.Equal(names, tc.wantPruned) {
				t.Fatalf("pruned %v, want %v", names, tc.wantPruned)
			}
			for _, keep := range []string{other, "shop-20260630T030000Z.partial", "shop-notaset", "shop-20260703T030000Z"} {
				if _, err := os.Stat(filepath.Join(root, keep)); err != nil {
					t.Errorf("%s: %v, want it kept", keep, err)
				}
			}
		})
	}
}
