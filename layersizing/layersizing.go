// Package layersizing is the sizing of cache layers of the design brief:
// from the miss-ratio curves the cache nodes report (GET /mrc, estimated
// online with SHARDS) it splits a cluster's cache budget among the layers
// sized automatically, by the rule of package placement/sizing (D3N's
// Algorithm 2: the split that serves the most reads from the caches), and
// returns the entries a member of each layer gets, which the partition map
// carries to the nodes (partmap.Map.WithEntries). The operator and
// standalone mode's control loop both run it; it imports no Kubernetes
// package.
//
// A layer some of whose nodes reported no curve (starting, failed, not
// answering) keeps its entries: a split computed without its reads would
// move its entries to the layers that reported. The budget holds from the
// first map on: before any curve arrives, or when the current split does
// not fit the budget, every node gets the same entries.
package layersizing

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/placement/sizing"
)

// Config is what Plan sizes.
type Config struct {
	// Budget is the entries the members of Layers cache together.
	Budget int
	// Layers names the layers sized.
	Layers []string
	// Start is each layer's entries a member while the map gives none
	// (the nodes' own capacity).
	Start map[string]int
	// Hysteresis is sizing.Config.Hysteresis (0: its default).
	Hysteresis float64
}

// Reports are the nodes' curves by member name.
type Reports map[string]metrics.MissRatioCurve

// LayerResult is one sized layer's share.
type LayerResult struct {
	Name string
	// Entries is what each member caches under the split.
	Entries int
	// Estimated is the fraction of the layer's reads its caches serve at
	// Entries as its curves estimate it, Measured the fraction they
	// served over the curves' windows; NaN without reads.
	Estimated, Measured float64
}

// Result is a split.
type Result struct {
	// Entries is each sized layer's entries a member, for WithEntries.
	Entries map[string]int
	// Layers are the sized layers' shares, in the map's order.
	Layers []LayerResult
	// Missing counts the Active members of sized layers without a curve.
	Missing int
}

// Plan splits cfg.Budget among cfg.Layers of m from the curves r.
func Plan(cfg Config, m *partmap.Map, r Reports) (Result, error) {
	var (
		layers  []sizing.Layer
		current []int
		res     = Result{Entries: map[string]int{}}
		partial bool // a sized layer lacks some curves
	)
	for _, l := range m.Layers {
		if !slices.Contains(cfg.Layers, l.Name) {
			continue
		}
		sl := sizing.Layer{Name: l.Name, Nodes: len(l.Members)}
		for _, mb := range l.Members {
			if mb.State != partmap.Active {
				continue
			}
			c, ok := r[mb.Name]
			if !ok || !(c.Window > 0) {
				res.Missing++
				partial = true
				continue
			}
			sl.Curves = append(sl.Curves, curveOf(c))
		}
		layers = append(layers, sl)
		start := l.Entries
		if start == 0 {
			start = cfg.Start[l.Name]
		}
		current = append(current, start)
	}
	if len(layers) == 0 {
		return Result{}, errors.New("cannot size the cache layers: the map has none of the layers to size")
	}
	split := layers
	if partial { // nothing moves; the budget still holds
		split = make([]sizing.Layer, len(layers))
		for i, l := range layers {
			split[i] = sizing.Layer{Name: l.Name, Nodes: l.Nodes}
		}
	}
	s, err := sizing.Split(sizing.Config{Budget: cfg.Budget, Hysteresis: cfg.Hysteresis}, split, current)
	if err != nil {
		return Result{}, fmt.Errorf("cannot size the cache layers: %w", err)
	}
	for i, l := range layers {
		res.Entries[l.Name] = s.Entries[i]
		res.Layers = append(res.Layers, LayerResult{Name: l.Name, Entries: s.Entries[i],
			Estimated: estimated(l, s.Entries[i]), Measured: measured(m, l.Name, r)})
	}
	return res, nil
}

// curveOf is a node's report as the sizing reads it.
func curveOf(c metrics.MissRatioCurve) sizing.Curve {
	out := sizing.Curve{Reads: float64(c.Requests) / c.Window, Points: make([]sizing.Point, len(c.Points))}
	for i, p := range c.Points {
		out.Points[i] = sizing.Point{Entries: p.Entries, MissRatio: p.MissRatio}
	}
	return out
}

// estimated is the layer's modelled hit ratio at entries.
func estimated(l sizing.Layer, entries int) float64 {
	var reads, hits float64
	for _, c := range l.Curves {
		reads += c.Reads
		hits += c.Reads * (1 - c.MissRatio(entries))
	}
	if reads == 0 {
		return math.NaN()
	}
	return hits / reads
}

// measured is the hit ratio layer's nodes reported.
func measured(m *partmap.Map, layer string, r Reports) float64 {
	var reads, hits uint64
	for _, l := range m.Layers {
		if l.Name != layer {
			continue
		}
		for _, mb := range l.Members {
			if c, ok := r[mb.Name]; ok {
				reads += c.Requests
				hits += c.Hits
			}
		}
	}
	if reads == 0 {
		return math.NaN()
	}
	return float64(hits) / float64(reads)
}
