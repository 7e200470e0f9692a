package layersizing_test

import (
	"context"
	"math"
	"net"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/layersizing"
	"github.com/distcache/distcache/placement/partmap"
)

// newMap is 2 spines over 8 racks, one leaf each.
func newMap(t testing.TB) *partmap.Map {
	t.Helper()
	m, err := partmap.Build(partmap.Spec{Cluster: "c", Racks: 8, ShardsPerRack: 1, Layers: []partmap.LayerSpec{
		{Name: "spine", Nodes: 2}, {Name: "leaf", BoundToRacks: true},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// uniform is a node's report of reads per second spread evenly over keys
// keys, for a 10 s window with hits of them served.
func uniform(reads float64, keys int, hitRatio float64) metrics.MissRatioCurve {
	req := uint64(reads * 10)
	return metrics.MissRatioCurve{Window: 10, Requests: req, Hits: uint64(float64(req) * hitRatio),
		Points: []metrics.CurvePoint{{Entries: keys, MissRatio: 0}}}
}

// reportsOf gives every member of layer the same curve.
func reportsOf(m *partmap.Map, r layersizing.Reports, layer string, c metrics.MissRatioCurve) {
	for _, l := range m.Layers {
		if l.Name == layer {
			for _, mb := range l.Members {
				r[mb.Name] = c
			}
		}
	}
}

func TestPlan(t *testing.T) {
	m := newMap(t)
	cfg := layersizing.Config{Budget: 2000, Layers: []string{"spine", "leaf"}, Start: map[string]int{"spine": 200, "leaf": 200}}
	full := layersizing.Reports{}
	reportsOf(m, full, "spine", uniform(1000, 1000, 0.2))
	reportsOf(m, full, "leaf", uniform(250, 125, 1))
	res, err := layersizing.Plan(cfg, m, full)
	if err != nil {
		t.Fatal(err)
	}
	// Leaves need their racks' 125 keys; the spines get the rest.
	if res.Entries["spine"] < 490 || res.Entries["leaf"] != 125 || res.Missing != 0 {
		t.Fatalf("split %v (missing %d), want about 500 a spine and 125 a leaf", res.Entries, res.Missing)
	}
	if l := res.Layers[0]; l.Name != "spine" || math.Abs(l.Estimated-float64(l.Entries)/1000) > 1e-9 || math.Abs(l.Measured-0.2) > 1e-3 {
		t.Errorf("spine %+v: want estimated entries/1000 and measured 0.2", l)
	}

	partial := layersizing.Reports{}
	reportsOf(m, partial, "spine", uniform(1000, 1000, 0.2))
	res, err = layersizing.Plan(cfg, m, partial)
	if err != nil || res.Entries["spine"] != 200 || res.Entries["leaf"] != 200 || res.Missing != 8 {
		t.Fatalf("without the leaves' curves: %v (missing %d), %v; want the current split kept", res.Entries, res.Missing, err)
	}

	over := cfg
	over.Start = map[string]int{"spine": 1000, "leaf": 1000}
	res, err = layersizing.Plan(over, m, layersizing.Reports{})
	if err != nil || res.Entries["spine"] != 200 || res.Entries["leaf"] != 200 {
		t.Fatalf("no curve and a start over the budget: %v, %v; want the even split", res.Entries, err)
	}
	if !math.IsNaN(res.Layers[0].Estimated) || !math.IsNaN(res.Layers[0].Measured) {
		t.Errorf("no reads: %+v, want NaN ratios", res.Layers[0])
	}
	if _, err := layersizing.Plan(layersizing.Config{Budget: 2000, Layers: []string{"other"}}, m, full); err == nil {
		t.Error("no sized layer in the map: no error")
	}
}

// TestScrape reads the curves of real metrics servers and names the one
// that does not answer.
func TestScrape(t *testing.T) {
	want := uniform(100, 50, 0.5)
	srv, err := metrics.Listen("127.0.0.1:0", prometheus.NewRegistry(), nil,
		metrics.WithMissRatioCurve(func() metrics.MissRatioCurve { return want }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close(context.Background()) })
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	r, err := layersizing.NewScraper().Scrape(t.Context(), map[string]string{"up": srv.Addr(), "down": dead})
	if got := r["up"]; got.Requests != want.Requests || len(got.Points) != 1 {
		t.Errorf("curve of up: %+v", got)
	}
	if _, ok := r["down"]; ok || err == nil || !strings.Contains(err.Error(), "down") {
		t.Errorf("down: in reports %v, error %v", ok, err)
	}
}
