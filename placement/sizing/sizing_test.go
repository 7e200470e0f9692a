package sizing_test

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/distcache/distcache/placement/sizing"
)

// uniform is the exact LRU curve of reads spread evenly over keys keys:
// the miss ratio falls linearly to 0 at keys entries.
func uniform(reads float64, keys int) sizing.Curve {
	return sizing.Curve{Reads: reads, Points: []sizing.Point{{Entries: keys, MissRatio: 0}}}
}

// layer is a layer of nodes nodes, each with curve c.
func layer(name string, nodes int, c sizing.Curve) sizing.Layer {
	l := sizing.Layer{Name: name, Nodes: nodes}
	for range nodes {
		l.Curves = append(l.Curves, c)
	}
	return l
}

func TestMissRatio(t *testing.T) {
	c := sizing.Curve{Points: []sizing.Point{{Entries: 10, MissRatio: 0.8}, {Entries: 100, MissRatio: 0.2}}}
	for _, tc := range []struct {
		entries int
		want    float64
	}{{0, 1}, {5, 0.9}, {10, 0.8}, {55, 0.5}, {100, 0.2}, {1000, 0.2}} {
		if got := c.MissRatio(tc.entries); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("MissRatio(%d) = %v, want %v", tc.entries, got, tc.want)
		}
	}
	if got := (sizing.Curve{}).MissRatio(50); got != 1 {
		t.Errorf("empty curve: %v, want 1", got)
	}
}

func TestSplit(t *testing.T) {
	// Two spines see every key (1,000 of them, evenly); eight leaves see
	// a rack's 125 each. 2,000 entries: the even split (200 a node)
	// wastes 75 entries on every leaf and leaves the spines at 20 %.
	wide := layer("spine", 2, uniform(1000, 1000))
	narrow := layer("leaf", 8, uniform(250, 125))
	tests := []struct {
		name        string
		cfg         sizing.Config
		layers      []sizing.Layer
		current     []int
		want        []int
		changed     bool
		wantHitsMin float64
	}{
		{name: "leaves get their working set, spines the rest", cfg: sizing.Config{Budget: 2000, Steps: 2000},
			layers: []sizing.Layer{wide, narrow}, current: []int{200, 200}, want: []int{500, 125}, changed: true, wantHitsMin: 2*1000*0.5 + 8*250},
		{name: "from no split: the best", cfg: sizing.Config{Budget: 2000, Steps: 2000},
			layers: []sizing.Layer{wide, narrow}, want: []int{500, 125}, changed: true},
		{name: "same curves: the even split stays", cfg: sizing.Config{Budget: 1000},
			layers: []sizing.Layer{layer("a", 2, uniform(100, 1000)), layer("b", 2, uniform(100, 1000))}, current: []int{250, 250}, want: []int{250, 250}},
		{name: "a budget the current split leaves unused is spread", cfg: sizing.Config{Budget: 2000},
			layers: []sizing.Layer{layer("a", 2, uniform(100, 1000)), layer("b", 2, uniform(100, 1000))}, current: []int{100, 100}, want: []int{500, 500}, changed: true},
		{name: "a gain within the hysteresis is not taken", cfg: sizing.Config{Budget: 2000, Steps: 2000, Hysteresis: 0.5},
			layers: []sizing.Layer{wide, narrow}, current: []int{400, 150}, want: []int{400, 150}},
		{name: "a current split over the budget is replaced", cfg: sizing.Config{Budget: 2000, Steps: 2000, Hysteresis: 10},
			layers: []sizing.Layer{wide, narrow}, current: []int{1000, 200}, want: []int{500, 125}, changed: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := sizing.Split(tc.cfg, tc.layers, tc.current)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.Entries, tc.want) || res.Changed != tc.changed {
				t.Fatalf("Split = %v (changed %v), want %v (changed %v)", res.Entries, res.Changed, tc.want, tc.changed)
			}
			if res.Hits < tc.wantHitsMin-1e-6 {
				t.Fatalf("modelled hits %v, want at least %v", res.Hits, tc.wantHitsMin)
			}
			used := 0
			for i, l := range tc.layers {
				used += l.Nodes * res.Entries[i]
			}
			if used > tc.cfg.Budget {
				t.Fatalf("split %v uses %d entries, over the budget %d", res.Entries, used, tc.cfg.Budget)
			}
		})
	}
}

func TestSplitRefuses(t *testing.T) {
	if _, err := sizing.Split(sizing.Config{Budget: 3}, []sizing.Layer{{Name: "a", Nodes: 2}, {Name: "b", Nodes: 2}}, nil); !errors.Is(err, sizing.ErrBudget) {
		t.Fatalf("3 entries for 4 nodes: %v, want ErrBudget", err)
	}
	if _, err := sizing.Split(sizing.Config{Budget: 10}, []sizing.Layer{{Name: "a"}}, nil); err == nil {
		t.Fatal("a layer without nodes: no error")
	}
}
