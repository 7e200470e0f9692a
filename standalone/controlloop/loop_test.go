package controlloop_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/distcache/distcache/failover"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/standalone/controlloop"
)

// readiness is a Prober whose answers the test sets.
type readiness struct {
	mu       sync.Mutex // guards notReady
	notReady map[string]bool
}

func (r *readiness) Ready(_ context.Context, member string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.notReady[member]
}

func (r *readiness) set(member string, ready bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notReady[member] = !ready
}

// clock is a settable time.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time          { return c.now }
func (c *clock) advance(d time.Duration) { c.now = c.now.Add(d) }

func newMap(t *testing.T) *partmap.Map {
	t.Helper()
	m, err := partmap.Build(partmap.Spec{
		Cluster: "t", Racks: 2, ShardsPerRack: 1,
		Layers: []partmap.LayerSpec{{Name: "spine", Nodes: 3}, {Name: "leaf", BoundToRacks: true}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// published reads the map file.
func published(t *testing.T, path string) *partmap.Map {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := partmap.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func stateOf(t *testing.T, m *partmap.Map, member string) partmap.MemberState {
	t.Helper()
	l, i, ok := m.Member(member)
	if !ok {
		t.Fatalf("no member %s", member)
	}
	return m.Layers[l].Members[i].State
}

func TestFailAndRestore(t *testing.T) {
	m := newMap(t)
	victim := m.Layers[0].Members[1].Name
	path := filepath.Join(t.TempDir(), "map.json")
	probe := &readiness{notReady: map[string]bool{}}
	clk := &clock{now: time.Unix(1000, 0)}
	policy := failover.Policy{Grace: 2 * time.Second, HoldDown: 5 * time.Second}
	loop, err := controlloop.New(controlloop.Config{Policy: policy, MapFile: path, Prober: probe, Now: clk.Now}, m)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	steps := []struct {
		name        string
		ready       bool
		advance     time.Duration
		wantVersion int64
		wantState   partmap.MemberState
	}{
		{"all ready", true, 0, m.Version, partmap.Active},
		{"down, first seen", false, time.Second, m.Version, partmap.Active},
		{"down within the grace period", false, time.Second, m.Version, partmap.Active},
		{"down past the grace period", false, time.Second, m.Version + 1, partmap.Failed},
		{"back, first seen", true, time.Second, m.Version + 1, partmap.Failed},
		{"back within the hold-down", true, 4 * time.Second, m.Version + 1, partmap.Failed},
		{"back past the hold-down", true, time.Second, m.Version + 2, partmap.Active},
	}
	for _, s := range steps {
		clk.advance(s.advance)
		probe.set(victim, s.ready)
		if err := loop.Step(ctx); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		got := loop.Map()
		if got.Version != s.wantVersion || stateOf(t, got, victim) != s.wantState {
			t.Fatalf("%s: map v%d with %s %s, want v%d %s", s.name, got.Version, victim, stateOf(t, got, victim), s.wantVersion, s.wantState)
		}
		if got.Version > m.Version {
			if f := published(t, path); f.Version != got.Version || stateOf(t, f, victim) != s.wantState {
				t.Fatalf("%s: the map file has v%d, want v%d", s.name, f.Version, got.Version)
			}
		}
	}
	events := loop.Events()
	if len(events) != 2 || events[0].To != partmap.Failed || events[1].To != partmap.Active ||
		events[0].Member != victim || events[1].MapVersion != m.Version+2 {
		t.Fatalf("events = %+v, want failed then restored", events)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	m := newMap(t)
	probe := &readiness{notReady: map[string]bool{}}
	good := failover.Policy{Grace: time.Second, HoldDown: time.Second}
	for name, cfg := range map[string]controlloop.Config{
		"no grace":  {Policy: failover.Policy{HoldDown: time.Second}, MapFile: "m", Prober: probe},
		"no prober": {Policy: good, MapFile: "m"},
		"no file":   {Policy: good, Prober: probe},
	} {
		if _, err := controlloop.New(cfg, m); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
}
