package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/mapwatch"
	"github.com/distcache/distcache/fabric/cacheswitch"
	"github.com/distcache/distcache/fabric/fleet"
	"github.com/distcache/distcache/fabric/pipeline"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/placement/partmap"
)

type addresser struct{}

func (addresser) ShardAddress(r, s int) string { return fmt.Sprintf("127.0.0.1:%d", 7000+10*r+s) }
func (addresser) MemberAddress(_ string, i int) string {
	return fmt.Sprintf("127.0.0.%d:9000", i+1)
}

// followMap writes m to a map file and runs f, following that file,
// until the test ends.
func followMap(t *testing.T, f *fleet.Fleet, m *partmap.Map) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "map.json")
	if err := mapwatch.WriteFile(path, m); err != nil {
		t.Fatal(err)
	}
	w, err := mapwatch.Load(path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { f.Run(ctx) })
	wg.Go(func() { f.Follow(ctx, w, 10*time.Millisecond) })
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// TestBuildFollowsTheMap: Build makes a runner per switch, in order, and
// Follow hands every read of the map to them; a switch that cannot be
// reached fails its renewals, and the fleet says so.
func TestBuildFollowsTheMap(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	builtin, err := pipeline.Builtin("distcache-v1model")
	if err != nil {
		t.Fatal(err)
	}
	m, err := partmap.Build(partmap.Spec{Cluster: "lab", Racks: 1, ShardsPerRack: 1, Addresses: addresser{},
		Layers: []partmap.LayerSpec{{Name: "spine", Nodes: 2, Switch: true}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, runners := fleet.Build([]fleet.Switch{
		{Member: "lab-spine-0", P4Runtime: "127.0.0.1:1", DeviceID: 1},
		{Member: "lab-spine-1", P4Runtime: "127.0.0.1:1", DeviceID: 1},
	}, fleet.Config{Pipeline: builtin, Controller: cacheswitch.Config{Lease: time.Second}, Logger: quiet})
	if len(runners) != 2 || runners[0] == runners[1] {
		t.Fatalf("Build made runners %v, want two", runners)
	}
	followMap(t, f, m)
	poll.Until(t, "a renewal without a session", func() bool { return f.Healthy() != nil })
	if err := f.Healthy(); !errors.Is(err, cacheswitch.ErrNoSession) {
		t.Fatalf("Healthy = %v, want a renewal without a session", err)
	}
}
