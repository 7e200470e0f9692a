package copies

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// layout is a test placement: every key's owners and extra nodes are
// given by name; keys not listed are owned by nodes 0 (upper) and 1.
type layout struct {
	count  int
	owners map[string][]int
	extra  map[string][]int
}

func (l layout) Count() int { return l.count }

func (l layout) Owners(key string, dst []int) []int {
	if o, ok := l.owners[key]; ok {
		return append(dst, o...)
	}
	return append(dst, 0, 1)
}

func (l layout) Extra(key string, n int, dst []int) []int {
	e := l.extra[key]
	return append(dst, e[:min(n, len(e))]...)
}

type modelOption func(*Model)

// testModel is a cluster of cache nodes of capacity 100 and servers of
// capacity 10, γ = 1, 2 units of node work per copy and write, up to 4
// copies, no slot limit and no hysteresis.
func testModel(opts ...modelOption) Model {
	m := Model{NodeCapacity: 100, ServerCapacity: 10, CoherenceCost: 1, NodeWriteCost: 2, MaxCopies: 4}
	for _, o := range opts {
		o(&m)
	}
	return m
}

func withSlots(n int) modelOption          { return func(m *Model) { m.Slots = n } }
func withHysteresis(h float64) modelOption { return func(m *Model) { m.Hysteresis = h } }

type keyOption func(*Key)

func key(name string, reads, writes float64, server int, opts ...keyOption) Key {
	k := Key{Name: name, Reads: reads, Writes: writes, Server: server}
	for _, o := range opts {
		o(&k)
	}
	return k
}

func now(c int) keyOption { return func(k *Key) { k.Now = c } }

func decide(t *testing.T, m Model, keys []Key, base []float64, l layout) Decision {
	t.Helper()
	d, err := Decide(m, keys, base, l)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDecideCopies(t *testing.T) {
	fourNodes := layout{count: 4, extra: map[string][]int{"hot": {2, 3}}}
	tests := []struct {
		name   string
		model  Model
		keys   []Key
		base   []float64
		layout layout
		want   [][]int // holders per key
	}{{
		name:   "read-only keys get one copy per layer, as plain DistCache",
		model:  testModel(),
		keys:   []Key{key("a", 5, 0, 0), key("b", 3, 0, 1)},
		base:   []float64{1, 1},
		layout: fourNodes,
		want:   [][]int{{0, 1}, {0, 1}},
	}, {
		name:  "a key hotter than a node gets copies on the extra nodes, each within half a node",
		model: testModel(),
		// The rate limit of the other keys' servers is 10 (base 1): at
		// that rate "hot" reads 120, which needs ⌈120/50⌉ = 3 copies.
		keys:   []Key{key("hot", 12, 0, 0), key("b", 1, 0, 1)},
		base:   []float64{0, 1},
		layout: fourNodes,
		want:   [][]int{{0, 1, 2}, {0, 1}},
	}, {
		name:   "a key whose writes cost its server more than caching saves is not cached",
		model:  testModel(),
		keys:   []Key{key("w", 1, 1, 0), key("r", 2, 0.1, 1)},
		base:   []float64{1, 1},
		layout: fourNodes,
		want:   [][]int{nil, {0, 1}},
	}, {
		name:  "a write-hot key on the limiting server keeps one copy, on its least loaded owner",
		model: testModel(),
		// Server 0 limits: "w" with two copies costs it 0.5·3 = 1.5, with
		// one 1.0, beside a base of 1. Node 0 already serves "r", which
		// has one owner.
		keys:   []Key{key("r", 10, 0, 1), key("w", 5, 0.5, 0)},
		base:   []float64{1, 0},
		layout: layout{count: 2, owners: map[string][]int{"r": {0}}},
		want:   [][]int{{0}, {1}},
	}, {
		name:   "the same key on a server with room keeps one copy per layer",
		model:  testModel(),
		keys:   []Key{key("w", 5, 0.5, 0), key("x", 1, 0, 1)},
		base:   []float64{0, 2},
		layout: fourNodes,
		want:   [][]int{{0, 1}, {0, 1}},
	}, {
		name:  "slots go to the hottest keys first",
		model: testModel(withSlots(1)),
		keys:  []Key{key("cold", 1, 0, 0), key("hot", 2, 0, 1)},
		base:  []float64{1, 1},
		// one slot on each of two nodes: the hot key takes both
		layout: layout{count: 2},
		want:   [][]int{nil, {0, 1}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := decide(t, tt.model, tt.keys, tt.base, tt.layout)
			for i, want := range tt.want {
				if got := d.Holders[i]; !slices.Equal(got, want) {
					t.Errorf("key %q: holders %v, want %v (rate %v)", tt.keys[i].Name, got, want, d.Rate)
				}
			}
		})
	}
}

// TestDecideRate checks the modelled rate: a server that carries 2 of
// uncached load besides a read-only key limits the system at 10/2 = 5; a
// write-only key, which is not cached, adds 1 and limits it at 10/3; a
// read key that two copies cannot carry within a node each limits it at
// 2·100/50 = 4.
func TestDecideRate(t *testing.T) {
	tests := []struct {
		keys []Key
		want float64
	}{
		{[]Key{key("r", 5, 0, 0)}, 5},
		{[]Key{key("w", 0, 1, 0)}, 10.0 / 3},
		{[]Key{key("r", 50, 0, 0)}, 4},
	}
	for _, tt := range tests {
		d := decide(t, testModel(), tt.keys, []float64{2}, layout{count: 2})
		if math.Abs(d.Rate-tt.want) > tt.want*1e-5 {
			t.Errorf("keys %v: rate %v, want %v", tt.keys, d.Rate, tt.want)
		}
	}
	// MaxRate caps the rate the decision is taken at: 1.5 for the read key
	// that alone would allow 2.
	capped := testModel(func(m *Model) { m.MaxRate = 1.5 })
	d := decide(t, capped, []Key{key("r", 50, 0, 0)}, []float64{0}, layout{count: 2, owners: map[string][]int{"r": {0, 1}}})
	if d.Rate != 1.5 || len(d.Holders[0]) != 2 {
		t.Errorf("with MaxRate 1.5: rate %v, holders %v; want 1.5 and one copy per layer", d.Rate, d.Holders[0])
	}
}

// TestDecideHysteresis: a key just above the break-even point of caching
// (reads equal to γ·copies·writes) is cached only if it already was, and
// one just below is dropped only without hysteresis.
func TestDecideHysteresis(t *testing.T) {
	tests := []struct {
		name   string
		reads  float64
		now    int
		h      float64
		cached bool
	}{
		{"above break-even, new, no hysteresis", 1.05, 0, 0, true},
		{"above break-even, new, within the band", 1.05, 0, 0.1, false},
		{"above break-even, cached", 1.05, 1, 0.1, true},
		{"below break-even, cached, within the band", 0.95, 1, 0.1, true},
		{"below break-even, cached, no hysteresis", 0.95, 1, 0, false},
		{"below the band, cached", 0.85, 1, 0.1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// One owner: the key has one copy or none.
			keys := []Key{key("k", tt.reads, 1, 0, now(tt.now))}
			d := decide(t, testModel(withHysteresis(tt.h)), keys, []float64{7.5}, layout{count: 2, owners: map[string][]int{"k": {0}}})
			if got := len(d.Holders[0]) > 0; got != tt.cached {
				t.Errorf("cached = %v, want %v (holders %v, rate %v)", got, tt.cached, d.Holders[0], d.Rate)
			}
		})
	}
}

func TestDecisionCopies(t *testing.T) {
	d := Decision{Holders: [][]int{nil, {1}, {0, 1}, {0, 1}, {0, 1, 2}}}
	if got, want := d.Copies(), []int{1, 1, 2, 1}; !slices.Equal(got, want) {
		t.Errorf("Copies() = %v, want %v", got, want)
	}
}

func TestDecideRejects(t *testing.T) {
	tests := []struct {
		name  string
		model Model
		keys  []Key
		want  string
	}{
		{"no capacity", testModel(func(m *Model) { m.NodeCapacity = 0 }), nil, "capacities must be positive"},
		{"negative cost", testModel(func(m *Model) { m.CoherenceCost = -1 }), nil, "must not be negative"},
		{"no copies", testModel(func(m *Model) { m.MaxCopies = 0 }), nil, "max copies 0"},
		{"negative slots", testModel(withSlots(-1)), nil, "-1 slots"},
		{"hysteresis of 1", testModel(withHysteresis(1)), nil, "hysteresis 1 outside"},
		{"negative max rate", testModel(func(m *Model) { m.MaxRate = -1 }), nil, "max rate -1"},
		{"unknown server", testModel(), []Key{key("k", 1, 0, 3)}, `key "k" is on server 3 of 1`},
		{"negative rate", testModel(), []Key{key("k", -1, 0, 0)}, "has rates -1 and 0"},
		{"NaN rate", testModel(), []Key{key("k", math.NaN(), 0, 0)}, "has rates NaN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decide(tt.model, tt.keys, []float64{0}, layout{count: 2})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestDecideNothing(t *testing.T) {
	d := decide(t, testModel(), nil, []float64{1}, layout{count: 2})
	if len(d.Holders) != 0 || !math.IsInf(d.Rate, 1) {
		t.Fatalf("no keys: %+v", d)
	}
}

// TestRate: the rate factor of given copies is the tightest of the
// servers', the single copies' nodes' and the nodes' total bounds, and the
// rate of a decision's own holders is the decision's.
func TestRate(t *testing.T) {
	l := layout{count: 4}
	m := testModel()
	tests := []struct {
		name    string
		keys    []Key
		base    []float64
		holders [][]int
		want    float64
	}{
		// Uncached: its server serves 4 reads + 1 write, plus 1 of base.
		{"uncached key: its server", []Key{key("a", 4, 1, 0)}, []float64{1, 0}, [][]int{nil}, 10.0 / 6},
		// Two copies: the server sees 1 write and 2 coherence, 3 of 10.
		{"two copies: the server's coherence work", []Key{key("a", 60, 1, 0)}, []float64{0, 0}, [][]int{{0, 1}}, 10.0 / 3},
		// One copy: its node serves 90 reads and 2 of write work.
		{"one copy: its node", []Key{key("a", 90, 1, 1)}, []float64{0, 0}, [][]int{{0}}, 100.0 / 92},
		{"nothing limits", nil, []float64{0}, nil, math.Inf(1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Rate(m, tt.keys, tt.base, l, tt.holders)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got-tt.want) > 1e-9 && got != tt.want {
				t.Errorf("rate %v, want %v", got, tt.want)
			}
		})
	}
	keys := []Key{key("hot", 150, 0.5, 0), key("warm", 30, 1, 1), key("written", 2, 6, 0)}
	base := []float64{2, 1}
	d := decide(t, m, keys, base, l)
	got, err := Rate(m, keys, base, l, d.Holders)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got-d.Rate) > d.Rate*1e-5 {
		t.Errorf("rate of the decision's holders %v, the decision's %v", got, d.Rate)
	}
	if _, err := Rate(m, keys, base, l, d.Holders[:1]); err == nil {
		t.Error("holders for one of three keys accepted")
	}
	if _, err := Rate(m, keys, base, l, [][]int{{7}, nil, nil}); err == nil {
		t.Error("a holder outside the nodes accepted")
	}
}

// TestDecideExtraCopiesHysteresis: a key with more copies than layers
// keeps their count while each copy's share of its reads stays within the
// band around half a node (50 of 100 here), decided at the reported rates.
func TestDecideExtraCopiesHysteresis(t *testing.T) {
	tests := []struct {
		name   string
		reads  float64
		now    int
		h      float64
		copies int
	}{
		{"160 reads, new: 4 copies of 40", 160, 0, 0.1, 4},
		{"160 reads, 3 copies, no hysteresis: 4", 160, 3, 0, 4},
		{"160 reads, 3 copies of 53 within the band: kept", 160, 3, 0.1, 3},
		{"190 reads, 3 copies of 63 beyond the band: 4", 190, 3, 0.1, 4},
		{"140 reads, 4 copies of 35, 3 of 47 within the band: kept", 140, 4, 0.1, 4},
		{"110 reads, 4 copies, 3 of 37 beyond the band: 3", 110, 4, 0.1, 3},
		{"90 reads, 4 copies, fewer needed beyond the band: 2", 90, 4, 0.1, 2},
	}
	l := layout{count: 6, owners: map[string][]int{"k": {0, 1}}, extra: map[string][]int{"k": {2, 3, 4}}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := testModel(withHysteresis(tt.h))
			m.MaxRate = 1
			keys := []Key{key("k", tt.reads, 0, 0, now(tt.now))}
			d := decide(t, m, keys, []float64{0}, l)
			if got := len(d.Holders[0]); got != tt.copies {
				t.Errorf("%d copies, want %d (holders %v, rate %v)", got, tt.copies, d.Holders[0], d.Rate)
			}
		})
	}
}
