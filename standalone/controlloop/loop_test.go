package controlloop_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/distcache/distcache/dataplane/mapwatch"
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

// withVersion is a copy of m at version v.
func withVersion(m *partmap.Map, v int64) *partmap.Map {
	c := m.Clone()
	c.Version = v
	return c
}

// TestResumesFromThePublishedMap starts a loop from one map while the map
// file holds another: a newer version in the file is adopted, so the next
// version follows it; an older one or a file that does not decode is
// ignored.
func TestResumesFromThePublishedMap(t *testing.T) {
	base := newMap(t)
	victim := base.Layers[0].Members[0].Name
	tests := []struct {
		name        string
		start       int64  // the loop's map version
		file        []byte // the map file's content when the loop steps (nil: encode fileVersion)
		fileVersion int64
		want        int64 // the version published when the victim fails
	}{
		{name: "newer file", start: 1, fileVersion: 5, want: 6},
		{name: "same version", start: 3, fileVersion: 3, want: 4},
		{name: "older file", start: 3, fileVersion: 2, want: 4},
		{name: "file that does not decode", start: 3, file: []byte("{not a map"), want: 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "map.json")
			if tc.file != nil {
				if err := os.WriteFile(path, tc.file, 0o644); err != nil {
					t.Fatal(err)
				}
			} else if err := mapwatch.WriteFile(path, withVersion(base, tc.fileVersion)); err != nil {
				t.Fatal(err)
			}
			probe := &readiness{notReady: map[string]bool{victim: true}}
			clk := &clock{now: time.Unix(1000, 0)}
			loop, err := controlloop.New(controlloop.Config{
				Policy: failover.Policy{Grace: time.Second, HoldDown: time.Second}, MapFile: path, Prober: probe, Now: clk.Now,
			}, withVersion(base, tc.start))
			if err != nil {
				t.Fatal(err)
			}
			for range 2 { // first seen not ready, then past the grace period
				if err := loop.Step(context.Background()); err != nil {
					t.Fatal(err)
				}
				clk.advance(time.Second)
			}
			got := published(t, path)
			if got.Version != tc.want || stateOf(t, got, victim) != partmap.Failed || loop.Map().Version != tc.want {
				t.Fatalf("published v%d with %s %s (loop at v%d), want v%d Failed",
					got.Version, victim, stateOf(t, got, victim), loop.Map().Version, tc.want)
			}
		})
	}
}

// TestEventsAreAppendedToTheEventsFile fails and restores a member with
// two loops in turn, as with a loop that was restarted in between: the
// events file holds every change of both, in order, as the loops
// published them.
func TestEventsAreAppendedToTheEventsFile(t *testing.T) {
	m := newMap(t)
	victim := m.Layers[1].Members[0].Name
	dir := t.TempDir()
	path, events := filepath.Join(dir, "map.json"), filepath.Join(dir, "events.jsonl")
	if err := mapwatch.WriteFile(path, m); err != nil {
		t.Fatal(err)
	}
	probe := &readiness{notReady: map[string]bool{victim: true}}
	clk := &clock{now: time.Unix(1000, 0)}
	policy := failover.Policy{Grace: time.Second, FenceLead: 500 * time.Millisecond, HoldDown: time.Second}
	newLoop := func() *controlloop.Loop {
		l, err := controlloop.New(controlloop.Config{Policy: policy, MapFile: path, EventsFile: events, Prober: probe, Now: clk.Now}, m)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	step := func(l *controlloop.Loop, advance time.Duration) {
		t.Helper()
		clk.advance(advance)
		if err := l.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	first := newLoop()
	step(first, 0)                    // first seen not ready
	step(first, 500*time.Millisecond) // fenced
	step(first, 500*time.Millisecond) // failed
	second := newLoop()               // restarted: starts from the map v1 it is given, adopts v3 from the file
	probe.set(victim, true)
	step(second, 0)           // first seen ready
	step(second, time.Second) // restored
	want := append(first.Events(), second.Events()...)
	got, err := controlloop.ReadEvents(events)
	if err != nil {
		t.Fatal(err)
	}
	wantTo := []partmap.MemberState{partmap.Fenced, partmap.Failed, partmap.Active}
	if len(got) != len(wantTo) || len(want) != len(wantTo) {
		t.Fatalf("events file has %d events, the loops %d; want %d", len(got), len(want), len(wantTo))
	}
	for i, e := range got {
		if !e.Time.Equal(want[i].Time) || e.Change != want[i].Change || e.MapVersion != want[i].MapVersion {
			t.Errorf("event %d in the file = %+v, the loop published %+v", i, e, want[i])
		}
		if e.To != wantTo[i] || e.Member != victim || e.MapVersion != m.Version+int64(i)+1 {
			t.Errorf("event %d = %s %s in v%d, want %s in v%d", i, e.Member, e.To, e.MapVersion, wantTo[i], m.Version+int64(i)+1)
		}
	}
}

// TestMetrics checks the loop's series after a member fails: the remap
// by the state entered, the published version and the failed probes of
// the member (one per step).
func TestMetrics(t *testing.T) {
	m := newMap(t)
	victim := m.Layers[0].Members[2].Name
	path := filepath.Join(t.TempDir(), "map.json")
	probe := &readiness{notReady: map[string]bool{victim: true}}
	clk := &clock{now: time.Unix(1000, 0)}
	reg := prometheus.NewRegistry()
	loop, err := controlloop.New(controlloop.Config{
		Policy: failover.Policy{Grace: time.Second, HoldDown: time.Second}, MapFile: path, Prober: probe, Now: clk.Now, Registerer: reg,
	}, m)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := loop.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
		clk.advance(time.Second)
	}
	want := `
# HELP distcache_controlloop_map_version Version of the partition map the control loop last published or resumed from.
# TYPE distcache_controlloop_map_version gauge
distcache_controlloop_map_version 2
# HELP distcache_controlloop_members Cache members in the map the control loop last published, by state (Active, Fenced, Failed).
# TYPE distcache_controlloop_members gauge
distcache_controlloop_members{state="Active"} 4
distcache_controlloop_members{state="Failed"} 1
distcache_controlloop_members{state="Fenced"} 0
# HELP distcache_controlloop_publish_failures_total Map versions that could not be written to the map file (retried at the next step).
# TYPE distcache_controlloop_publish_failures_total counter
distcache_controlloop_publish_failures_total 0
# HELP distcache_controlloop_remaps_total Member state changes published, by the state entered (Fenced, Failed, or Active when restored).
# TYPE distcache_controlloop_remaps_total counter
distcache_controlloop_remaps_total{to="Active"} 0
distcache_controlloop_remaps_total{to="Failed"} 1
distcache_controlloop_remaps_total{to="Fenced"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "distcache_controlloop_map_version", "distcache_controlloop_members",
		"distcache_controlloop_publish_failures_total", "distcache_controlloop_remaps_total"); err != nil {
		t.Fatal(err)
	}
	failures, err := probeFailures(reg)
	if err != nil {
		t.Fatal(err)
	}
	if len(failures) != 5 || failures[victim] != 3 {
		t.Fatalf("probe failures = %v, want 3 for %s and 0 for the 4 others", failures, victim)
	}
}

// probeFailures gathers distcache_controlloop_probe_failures_total by
// member.
func probeFailures(g prometheus.Gatherer) (map[string]float64, error) {
	families, err := g.Gather()
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "distcache_controlloop_probe_failures_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "member" {
					out[l.GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
	}
	return out, nil
}

// TestHealthy checks the loop's health: not before its first step, then
// whether its last step could publish what it decided.
func TestHealthy(t *testing.T) {
	m := newMap(t)
	victim := m.Layers[0].Members[0].Name
	dir := t.TempDir()
	path := filepath.Join(dir, "maps", "map.json") // its directory comes later
	probe := &readiness{notReady: map[string]bool{}}
	clk := &clock{now: time.Unix(1000, 0)}
	loop, err := controlloop.New(controlloop.Config{
		Policy: failover.Policy{Grace: time.Second, HoldDown: time.Second}, MapFile: path, Prober: probe, Now: clk.Now,
	}, m)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	steps := []struct {
		name    string
		do      func()
		healthy bool
	}{
		{"before the first step", func() {}, false},
		{"nothing to publish", func() { _ = loop.Step(ctx) }, true},
		{"the member down", func() { probe.set(victim, false); _ = loop.Step(ctx) }, true},
		{"cannot publish its failure", func() { clk.advance(time.Second); _ = loop.Step(ctx) }, false},
		{"published once the directory exists", func() {
			if err := os.Mkdir(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			_ = loop.Step(ctx)
		}, true},
	}
	for _, s := range steps {
		s.do()
		if err := loop.Healthy(); (err == nil) != s.healthy {
			t.Fatalf("%s: Healthy() = %v, want healthy %v", s.name, err, s.healthy)
		}
	}
	if got := published(t, path); got.Version != m.Version+1 || stateOf(t, got, victim) != partmap.Failed {
		t.Fatalf("published v%d, want v%d with %s Failed", got.Version, m.Version+1, victim)
	}
}

// probeTakes is a Prober whose every check takes d on its clock and finds
// the members in down not Ready.
type probeTakes struct {
	mu   sync.Mutex // guards now
	now  time.Time
	d    time.Duration
	down map[string]bool
}

func (p *probeTakes) Ready(_ context.Context, member string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.now = p.now.Add(p.d)
	return !p.down[member]
}

func (p *probeTakes) Now() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.now
}

// TestNotReadySinceTheStepStarted checks that a member found not Ready
// counts as not Ready from the start of the step whose probe found it, so
// that a policy that fences at once fences it in that step, and one that
// waits longer than the probe took does not.
func TestNotReadySinceTheStepStarted(t *testing.T) {
	tests := []struct {
		name       string
		fenceAfter time.Duration
		want       partmap.MemberState
	}{
		{name: "fence at once", fenceAfter: time.Nanosecond, want: partmap.Fenced},
		{name: "fence after longer than the probe", fenceAfter: time.Hour, want: partmap.Active},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMap(t)
			victim := m.Layers[0].Members[1].Name
			probe := &probeTakes{now: time.Unix(1000, 0), d: time.Millisecond, down: map[string]bool{victim: true}}
			policy := failover.Policy{Grace: 2 * time.Hour, HoldDown: time.Second, FenceAfter: tt.fenceAfter}
			loop, err := controlloop.New(controlloop.Config{Policy: policy, MapFile: filepath.Join(t.TempDir(), "map.json"),
				Prober: probe, Now: probe.Now}, m)
			if err != nil {
				t.Fatal(err)
			}
			if err := loop.Step(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := stateOf(t, loop.Map(), victim); got != tt.want {
				t.Fatalf("after one step %s is %s, want %s", victim, got, tt.want)
			}
		})
	}
}
