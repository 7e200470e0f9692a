package failover_test

import (
	"bytes"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/distcache/distcache/failover"
	"github.com/distcache/distcache/placement/partmap"
)

const (
	grace    = 30 * time.Second
	holdDown = 2 * time.Minute
)

// obsMap is observations keyed by member name.
type obsMap = map[string]failover.Observation

var (
	policy = failover.Policy{Grace: grace, HoldDown: holdDown}
	now    = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
)

// newMap returns a map of members c-spine-0..2 and c-leaf-0..1 (bound to
// two racks), Active except those in failed.
func newMap(t *testing.T, failed ...string) *partmap.Map {
	t.Helper()
	m, err := partmap.Build(partmap.Spec{Cluster: "c", Racks: 2, ShardsPerRack: 1, Layers: []partmap.LayerSpec{
		{Name: "spine", Nodes: 3}, {Name: "leaf", BoundToRacks: true},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range failed {
		if m, _, err = m.WithState(name, partmap.Failed); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// observe returns observations of every member of m: Ready since an hour
// ago, except the overrides.
func observe(m *partmap.Map, overrides obsMap) obsMap {
	obs := obsMap{}
	for _, l := range m.Layers {
		for _, mb := range l.Members {
			obs[mb.Name] = failover.Observation{Ready: true, Since: now.Add(-time.Hour)}
		}
	}
	maps.Copy(obs, overrides)
	return obs
}

// down and up observe a member not Ready or Ready since ago before now.
func down(ago time.Duration) failover.Observation { return failover.Observation{Since: now.Add(-ago)} }
func up(ago time.Duration) failover.Observation {
	return failover.Observation{Ready: true, Since: now.Add(-ago)}
}

func states(m *partmap.Map) map[string]partmap.MemberState {
	s := map[string]partmap.MemberState{}
	for _, l := range m.Layers {
		for _, mb := range l.Members {
			s[mb.Name] = mb.State
		}
	}
	return s
}

func encode(t *testing.T, m *partmap.Map) []byte {
	t.Helper()
	b, err := partmap.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func compile(t *testing.T, m *partmap.Map) *partmap.Placement {
	t.Helper()
	p, err := partmap.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestValidate(t *testing.T) {
	for p, want := range map[failover.Policy]string{ // want: substring of the error, "" for none
		policy:                             "",
		{HoldDown: time.Second}:            "grace period must be positive",
		{Grace: -1, HoldDown: time.Second}: "grace period must be positive",
		{Grace: time.Second}:               "hold-down period must be positive",
		{Grace: time.Second, HoldDown: time.Second, FenceLead: -1}: "fence lead must not be negative",
	} {
		err := p.Validate()
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "cannot ")) {
			t.Errorf("%+v.Validate() = %v, want %q", p, err, want)
		}
	}
}

func TestDecide(t *testing.T) {
	const active, failed = partmap.Active, partmap.Failed
	for _, tc := range []struct {
		name    string
		current partmap.MemberState
		o       failover.Observation
		want    failover.Decision
	}{
		{"active ready", active, up(time.Hour), failover.Decision{State: active}},
		{"active ready just now", active, up(0), failover.Decision{State: active}},
		{"active down within grace", active, down(10 * time.Second), failover.Decision{State: active, Recheck: 20 * time.Second}},
		{"active down 1ns short of grace", active, down(grace - 1), failover.Decision{State: active, Recheck: 1}},
		{"active down exactly grace", active, down(grace), failover.Decision{State: failed, Changed: true}},
		{"active down past grace", active, down(time.Hour), failover.Decision{State: failed, Changed: true}},
		{"active down since future", active, down(-time.Minute), failover.Decision{State: active, Recheck: grace}},
		{"failed down", failed, down(time.Hour), failover.Decision{State: failed}},
		{"failed down just now", failed, down(0), failover.Decision{State: failed}},
		{"failed ready within hold-down", failed, up(90 * time.Second), failover.Decision{State: failed, Recheck: 30 * time.Second}},
		{"failed ready 1ns short of hold-down", failed, up(holdDown - 1), failover.Decision{State: failed, Recheck: 1}},
		{"failed ready exactly hold-down", failed, up(holdDown), failover.Decision{State: active, Changed: true}},
		{"failed ready past hold-down", failed, up(time.Hour), failover.Decision{State: active, Changed: true}},
		{"failed ready since future", failed, up(-time.Minute), failover.Decision{State: failed, Recheck: holdDown}},
		{"unknown ready", "Draining", up(time.Hour), failover.Decision{State: active, Changed: true}},
		{"empty down within grace", "", down(0), failover.Decision{State: active, Changed: true, Recheck: grace}},
		{"unknown down past grace", "Draining", down(grace), failover.Decision{State: failed, Changed: true}},
	} {
		if got := policy.Decide(tc.current, tc.o, now); got != tc.want {
			t.Errorf("%s: Decide(%q, %+v) = %+v, want %+v", tc.name, tc.current, tc.o, got, tc.want)
		}
	}
}

func TestDecideFencing(t *testing.T) {
	const active, fenced, failed = partmap.Active, partmap.Fenced, partmap.Failed
	lead := 5 * time.Second
	fencing := failover.Policy{Grace: grace, HoldDown: holdDown, FenceLead: lead}
	for _, tc := range []struct {
		name    string
		p       failover.Policy
		current partmap.MemberState
		o       failover.Observation
		want    failover.Decision
	}{
		{"active ready", fencing, active, up(time.Hour), failover.Decision{State: active}},
		{"active down before the fence", fencing, active, down(10 * time.Second), failover.Decision{State: active, Recheck: 15 * time.Second}},
		{"active down 1ns short of the fence", fencing, active, down(grace - lead - 1), failover.Decision{State: active, Recheck: 1}},
		{"active down exactly at the fence", fencing, active, down(grace - lead), failover.Decision{State: fenced, Changed: true, Recheck: lead}},
		{"active down past grace fails at once", fencing, active, down(time.Hour), failover.Decision{State: failed, Changed: true}},
		{"fenced down within grace", fencing, fenced, down(grace - time.Second), failover.Decision{State: fenced, Recheck: time.Second}},
		{"fenced down exactly grace", fencing, fenced, down(grace), failover.Decision{State: failed, Changed: true}},
		{"fenced ready again is active at once", fencing, fenced, up(0), failover.Decision{State: active, Changed: true}},
		{"failed ready still waits the hold-down", fencing, failed, up(time.Second), failover.Decision{State: failed, Recheck: holdDown - time.Second}},
		{"lead capped at half the grace", failover.Policy{Grace: grace, HoldDown: holdDown, FenceLead: time.Hour}, active, down(grace/2 - 1), failover.Decision{State: active, Recheck: 1}},
		{"capped lead fences at half the grace", failover.Policy{Grace: grace, HoldDown: holdDown, FenceLead: time.Hour}, active, down(grace / 2), failover.Decision{State: fenced, Changed: true, Recheck: grace / 2}},
		{"no lead: fenced member still fails", policy, fenced, down(grace), failover.Decision{State: failed, Changed: true}},
		{"no lead: fenced member down keeps waiting", policy, fenced, down(time.Second), failover.Decision{State: fenced, Recheck: grace - time.Second}},
		{"leaving is fenced at once", fencing, active, leaving(0), failover.Decision{State: fenced, Changed: true, Recheck: grace}},
		{"leaving still fails after the grace", fencing, fenced, leaving(grace), failover.Decision{State: failed, Changed: true}},
		{"leaving without fencing waits the grace", policy, active, leaving(0), failover.Decision{State: active, Recheck: grace}},
	} {
		if got := tc.p.Decide(tc.current, tc.o, now); got != tc.want {
			t.Errorf("%s: Decide(%q, %+v) = %+v, want %+v", tc.name, tc.current, tc.o, got, tc.want)
		}
	}
}

// TestApplyNeverFencesLastActive checks that fencing counts as leaving the
// layer's active members: the last one is kept Active.
func TestApplyNeverFencesLastActive(t *testing.T) {
	fencing := failover.Policy{Grace: grace, HoldDown: holdDown, FenceLead: 5 * time.Second}
	m := newMap(t, "c-spine-0")
	obs := observe(m, obsMap{"c-spine-0": down(time.Hour), "c-spine-1": down(26 * time.Second), "c-spine-2": down(27 * time.Second)})
	next, changes, _ := fencing.Apply(m, obs, now)
	got := states(next)
	if got["c-spine-1"] != partmap.Active || got["c-spine-2"] != partmap.Fenced {
		t.Fatalf("states = %v, want c-spine-1 kept Active (down the shortest) and c-spine-2 Fenced; changes %+v", got, changes)
	}
}

func TestApplyNothingChanges(t *testing.T) {
	m := newMap(t, "c-leaf-1")
	obs := observe(m, obsMap{
		"c-spine-0": down(10 * time.Second),        // grace: 20s left
		"c-leaf-1":  up(holdDown - 15*time.Second), // hold-down: 15s left
	})
	next, changes, recheck := policy.Apply(m, obs, now)
	if next != m || changes != nil || recheck != 15*time.Second {
		t.Fatalf("Apply = %p, %v, %v; want %p, no changes, 15s", next, changes, recheck, m)
	}

	// Without observations, Active members start their grace now and Failed
	// ones stay Failed.
	next, changes, recheck = policy.Apply(m, nil, now)
	if next != m || changes != nil || recheck != grace {
		t.Fatalf("Apply without observations = %p, %v, %v; want %p, no changes, %v", next, changes, recheck, m, grace)
	}
}

func TestApplyFailsMember(t *testing.T) {
	m := newMap(t)
	before := encode(t, m)
	obs := observe(m, obsMap{"c-spine-1": down(45 * time.Second), "c-leaf-0": down(5 * time.Second)})
	next, changes, recheck := policy.Apply(m, obs, now)
	if next == m || next.Version != m.Version+1 {
		t.Fatalf("Apply returned version %d (same map: %v), want a copy with version %d", next.Version, next == m, m.Version+1)
	}
	if !bytes.Equal(encode(t, m), before) {
		t.Fatal("Apply modified its input map")
	}
	want := states(m)
	want["c-spine-1"] = partmap.Failed
	if got := states(next); !reflect.DeepEqual(got, want) {
		t.Fatalf("states = %v, want %v", got, want)
	}
	wantChanges := []failover.Change{{Layer: "spine", Member: "c-spine-1", From: partmap.Active, To: partmap.Failed, After: 45 * time.Second}}
	if !reflect.DeepEqual(changes, wantChanges) {
		t.Fatalf("changes = %+v, want %+v", changes, wantChanges)
	}
	if recheck != grace-5*time.Second {
		t.Fatalf("recheck = %v, want %v", recheck, grace-5*time.Second)
	}
}

func TestApplyRestoresAfterHoldDown(t *testing.T) {
	m := newMap(t, "c-spine-2")
	next, changes, recheck := policy.Apply(m, observe(m, obsMap{"c-spine-2": up(holdDown - time.Second)}), now)
	if next != m || changes != nil || recheck != time.Second {
		t.Fatalf("within hold-down: Apply = %p, %v, %v; want %p, no changes, 1s", next, changes, recheck, m)
	}
	// Restored with failures in both layers: one version, changes in map order.
	obs := observe(m, obsMap{"c-leaf-1": down(time.Minute), "c-spine-2": up(holdDown), "c-spine-0": down(grace)})
	next, changes, _ = policy.Apply(m, obs, now)
	if next.Version != m.Version+1 {
		t.Fatalf("version = %d, want %d", next.Version, m.Version+1)
	}
	var got []string
	for _, c := range changes {
		got = append(got, fmt.Sprintf("%s/%s:%s->%s@%v", c.Layer, c.Member, c.From, c.To, c.After))
	}
	want := []string{"spine/c-spine-0:Active->Failed@30s", "spine/c-spine-2:Failed->Active@2m0s", "leaf/c-leaf-1:Active->Failed@1m0s"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("changes = %v, want %v", got, want)
	}
}

func TestApplyKeepsLastActiveMember(t *testing.T) {
	const active, failed = partmap.Active, partmap.Failed
	for _, tc := range []struct {
		name   string
		failed []string // Failed before Apply
		obs    obsMap
		want   [2]partmap.MemberState // c-leaf-0 and c-leaf-1 after Apply
	}{
		{"survivor stays", []string{"c-leaf-0"}, obsMap{"c-leaf-0": down(time.Hour), "c-leaf-1": down(time.Hour)}, [2]partmap.MemberState{failed, active}},
		{"shortest down stays", nil, obsMap{"c-leaf-0": down(5 * time.Minute), "c-leaf-1": down(time.Minute)}, [2]partmap.MemberState{failed, active}},
		{"tie keeps first", nil, obsMap{"c-leaf-0": down(time.Minute), "c-leaf-1": down(time.Minute)}, [2]partmap.MemberState{active, failed}},
		{"fails once another is restored", []string{"c-leaf-0"}, obsMap{"c-leaf-0": up(holdDown), "c-leaf-1": down(time.Hour)}, [2]partmap.MemberState{active, failed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMap(t, tc.failed...)
			next, _, recheck := policy.Apply(m, observe(m, tc.obs), now)
			got := states(next)
			if g := [2]partmap.MemberState{got["c-leaf-0"], got["c-leaf-1"]}; g != tc.want {
				t.Errorf("leaf states = %v, want %v", g, tc.want)
			}
			if recheck != 0 {
				t.Errorf("recheck = %v, want 0: the kept member has nothing pending", recheck)
			}
			compile(t, next)
		})
	}
}

func TestApplyRestartConverges(t *testing.T) {
	m := newMap(t, "c-leaf-1")
	obs := observe(m, obsMap{
		"c-spine-0": down(time.Minute), "c-spine-1": down(10 * time.Second), "c-leaf-1": up(holdDown), "c-leaf-0": down(time.Hour),
	})
	next, changes, recheck := policy.Apply(m, obs, now)
	if len(changes) != 3 {
		t.Fatalf("first Apply made %d changes (%+v), want 3", len(changes), changes)
	}
	published := encode(t, next)

	again, changes2, recheck2 := policy.Apply(next, obs, now)
	if again != next || changes2 != nil || recheck2 != recheck {
		t.Fatalf("second Apply = %p, %+v, %v; want %p, no changes, %v", again, changes2, recheck2, next, recheck)
	}
	// A restarted controller reads the published document back.
	reread, err := partmap.Decode(published)
	if err != nil {
		t.Fatal(err)
	}
	restarted, changes3, _ := policy.Apply(reread, obs, now)
	if changes3 != nil || !bytes.Equal(encode(t, restarted), published) {
		t.Fatalf("restarted controller made changes %+v", changes3)
	}
	// Another controller starting from the same map reaches the same document.
	other, _, _ := policy.Apply(newMap(t, "c-leaf-1"), obs, now)
	if !bytes.Equal(encode(t, other), published) {
		t.Fatal("two controllers with the same observations published different maps")
	}
}

func TestFailureMovesOnlyFailedShare(t *testing.T) {
	for _, name := range []string{"c-spine-1", "c-leaf-0"} {
		t.Run(name, func(t *testing.T) {
			m := newMap(t)
			next, _, _ := policy.Apply(m, observe(m, obsMap{name: down(grace)}), now)
			layer, member, _ := m.Member(name)
			before, after := compile(t, m), compile(t, next)
			moved := 0
			for i := range 20000 {
				key := fmt.Sprintf("key-%d", i)
				b, a := before.Owner(layer, key), after.Owner(layer, key)
				if a == member || a < 0 {
					t.Fatalf("%s: owner after failure is %d", key, a)
				}
				if a != b {
					moved++
					if b != member {
						t.Fatalf("%s moved from member %d to %d, but only member %d failed", key, b, a, member)
					}
				}
			}
			if moved == 0 {
				t.Fatal("no key moved")
			}
		})
	}
}

// leaving is the observation of a member whose pod is being deleted,
// not Ready for d.
func leaving(d time.Duration) failover.Observation {
	o := down(d)
	o.Leaving = true
	return o
}

// TestApplyFencesDepartingLayer: a layer whose members all depart is
// fenced whole, without a fencing policy and whatever the members'
// readiness; a Failed member stays Failed, a second Apply changes
// nothing, and the other layers are decided as usual.
func TestApplyFencesDepartingLayer(t *testing.T) {
	departing := func(o failover.Observation) failover.Observation { o.Departing = true; return o }
	m := newMap(t, "c-spine-2")
	obs := observe(m, obsMap{
		"c-spine-0": departing(up(time.Hour)), "c-spine-1": departing(down(time.Second)), "c-spine-2": departing(down(time.Hour)),
		"c-leaf-0": down(time.Hour),
	})
	next, changes, _ := policy.Apply(m, obs, now)
	got := states(next)
	want := map[string]partmap.MemberState{"c-spine-0": partmap.Fenced, "c-spine-1": partmap.Fenced, "c-spine-2": partmap.Failed,
		"c-leaf-0": partmap.Failed, "c-leaf-1": partmap.Active}
	if !maps.Equal(got, want) {
		t.Fatalf("states %v, want %v (changes %+v)", got, want, changes)
	}
	if again, changes, _ := policy.Apply(next, obs, now.Add(time.Hour)); again != next {
		t.Errorf("a second Apply changed %+v", changes)
	}
}
