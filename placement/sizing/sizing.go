// Package sizing splits a cluster's cache budget among its cache layers
// from the miss-ratio curves their nodes measure, as D3N adapts the sizes
// of its cache layers to the workload (Kaynar et al., "D3N: A multi-layer
// cache for the rest of us", §III-C, Algorithm 2). It is plain Go, shared
// by the control loops of the operator and of standalone mode.
//
// Every cache node estimates the LRU miss-ratio curve of the reads it
// receives (package hotkey/mrc, SHARDS): for each size, the fraction of
// them a cache of that many entries would miss. Under DistCache's routing
// a read goes to one of its key's holders whatever they cache (§3.3), so
// the reads each node receives do not depend on the layers' sizes, and a
// split of the budget that gives every node of layer l s_l entries makes
// the caches serve
//
//	hits(s) = Σ_l Σ_{n ∈ l} reads_n · (1 − MR_n(s_l))
//
// of them. Split finds the s with Σ_l nodes_l · s_l ≤ Budget that
// maximizes hits, the modelled throughput where nothing is a bottleneck
// (every hit is a read a storage server does not serve). Like D3N's
// Algorithm 2 it searches around the current split, here by moving
// entries between two layers at a time, each pair exhaustively over a
// grid of Steps points, until no move gains: exact for two layers, a
// local optimum for more. A split is published only if its modelled hits
// beat the current split's by more than Hysteresis, so that noise in the
// curves does not resize the caches back and forth.
package sizing

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
)

// Point is one point of a miss-ratio curve.
type Point struct {
	Entries   int
	MissRatio float64
}

// Curve is one cache node's measured miss-ratio curve.
type Curve struct {
	// Reads is the reads the node received per second.
	Reads float64
	// Points are the curve's points, by increasing Entries. Between two
	// points the miss ratio is interpolated linearly; beyond the last it
	// stays the last one's, and at 0 entries it is 1.
	Points []Point
}

// MissRatio is the curve's miss ratio at entries.
func (c Curve) MissRatio(entries int) float64 {
	if entries <= 0 || len(c.Points) == 0 {
		return 1
	}
	i := sort.Search(len(c.Points), func(i int) bool { return c.Points[i].Entries >= entries })
	if i == len(c.Points) {
		return c.Points[len(c.Points)-1].MissRatio
	}
	hi := c.Points[i]
	if hi.Entries == entries {
		return hi.MissRatio
	}
	lo := Point{MissRatio: 1}
	if i > 0 {
		lo = c.Points[i-1]
	}
	f := float64(entries-lo.Entries) / float64(hi.Entries-lo.Entries)
	return lo.MissRatio + f*(hi.MissRatio-lo.MissRatio)
}

// Layer is one cache layer: its nodes' curves.
type Layer struct {
	Name string
	// Nodes is the layer's number of nodes, each given the layer's size.
	Nodes int
	// Curves are the curves of the nodes that reported one.
	Curves []Curve
}

// hits is the layer's modelled hits per second with entries a node.
func (l Layer) hits(entries int) float64 {
	var h float64
	for _, c := range l.Curves {
		h += c.Reads * (1 - c.MissRatio(entries))
	}
	return h
}

// Config bounds Split.
type Config struct {
	// Budget is the entries of all the layers' nodes together.
	Budget int
	// MinEntries is the fewest entries a node is given (default 1).
	MinEntries int
	// Steps is the grid of each pairwise search (default DefaultSteps).
	Steps int
	// Hysteresis is the relative gain in modelled hits a new split must
	// bring over the current one (default DefaultHysteresis).
	Hysteresis float64
}

// Defaults of Config.
const (
	DefaultSteps      = 256
	DefaultHysteresis = 0.02
)

// Result is a split and what it is modelled to serve.
type Result struct {
	// Entries is each layer's entries a node.
	Entries []int
	// Hits is the modelled hits per second under Entries, and Reads the
	// reads the curves cover: Hits/Reads is the modelled hit ratio.
	Hits, Reads float64
	// Changed says whether Entries differs from the current split.
	Changed bool
}

// ErrBudget is wrapped by Split's error when the budget cannot give every
// node MinEntries.
var ErrBudget = errors.New("budget too small")

// Split splits cfg.Budget among layers from their curves, starting from
// current (each layer's entries a node; nil or a split that does not fit
// the budget: the even split, the same entries for every node).
func Split(cfg Config, layers []Layer, current []int) (Result, error) {
	cfg = cfg.withDefaults()
	nodes := 0
	for _, l := range layers {
		if l.Nodes <= 0 {
			return Result{}, fmt.Errorf("cannot split the cache budget: layer %q has no nodes", l.Name)
		}
		nodes += l.Nodes
	}
	if nodes == 0 {
		return Result{}, errors.New("cannot split the cache budget: no layer")
	}
	if cfg.Budget < nodes*cfg.MinEntries {
		return Result{}, fmt.Errorf("cannot split the cache budget: %d entries for %d nodes of at least %d: %w", cfg.Budget, nodes, cfg.MinEntries, ErrBudget)
	}
	start := current
	if !fits(cfg, layers, start) {
		start = Even(cfg.Budget, layers)
	}
	start = spread(cfg.Budget, layers, start)
	best := search(cfg, layers, start)
	res := Result{Entries: start, Hits: total(layers, start)}
	for _, l := range layers {
		for _, c := range l.Curves {
			res.Reads += c.Reads
		}
	}
	if h := total(layers, best); h > res.Hits*(1+cfg.Hysteresis) || !fits(cfg, layers, current) {
		res.Entries, res.Hits = best, h
	}
	res.Changed = !slices.Equal(res.Entries, current)
	return res, nil
}

// Even is the split that gives every node the same entries.
func Even(budget int, layers []Layer) []int {
	nodes := 0
	for _, l := range layers {
		nodes += l.Nodes
	}
	out := make([]int, len(layers))
	for i := range out {
		out[i] = budget / max(nodes, 1)
	}
	return out
}

// spread gives the budget s leaves unused to every node alike, so that the
// search, which only moves entries, has the whole budget to split.
func spread(budget int, layers []Layer, s []int) []int {
	used, nodes := 0, 0
	for i, l := range layers {
		used += l.Nodes * s[i]
		nodes += l.Nodes
	}
	more := (budget - used) / nodes
	if more <= 0 {
		return s
	}
	out := slices.Clone(s)
	for i := range out {
		out[i] += more
	}
	return out
}

func (c Config) withDefaults() Config {
	if c.MinEntries <= 0 {
		c.MinEntries = 1
	}
	if c.Steps <= 0 {
		c.Steps = DefaultSteps
	}
	if c.Hysteresis == 0 {
		c.Hysteresis = DefaultHysteresis
	}
	return c
}

// search moves entries between pairs of layers while a move gains.
func search(cfg Config, layers []Layer, start []int) []int {
	s := slices.Clone(start)
	for round := 0; round < 4*len(layers)*len(layers); round++ {
		improved := false
		for i := range layers {
			for j := i + 1; j < len(layers); j++ {
				if pairBest(cfg, layers, s, i, j) {
					improved = true
				}
			}
		}
		if !improved {
			break
		}
	}
	return s
}

// pairBest sets s[i] and s[j] to the best split of the entries they hold
// together, on a grid of cfg.Steps points refined to one entry around its
// best, and says whether it gained.
func pairBest(cfg Config, layers []Layer, s []int, i, j int) bool {
	ni, nj := layers[i].Nodes, layers[j].Nodes
	pool := ni*s[i] + nj*s[j]
	lo, hi := cfg.MinEntries, (pool-nj*cfg.MinEntries)/ni
	if hi <= lo {
		return false
	}
	current := layers[i].hits(s[i]) + layers[j].hits(s[j])
	bestI, bestHits := s[i], current
	hitsAt := func(e int) float64 { return layers[i].hits(e) + layers[j].hits((pool-ni*e)/nj) }
	better := func(h float64) bool { return h > bestHits+1e-9*math.Max(1, bestHits) }
	step := max(1, (hi-lo)/cfg.Steps)
	for e := lo; e <= hi; e += step {
		if h := hitsAt(e); better(h) {
			bestI, bestHits = e, h
		}
	}
	// Refine around the grid's best, one entry at a time.
	for e := max(lo, bestI-step); e <= min(hi, bestI+step); e++ {
		if h := hitsAt(e); better(h) {
			bestI, bestHits = e, h
		}
	}
	if bestI == s[i] {
		return false
	}
	s[i], s[j] = bestI, (pool-ni*bestI)/nj
	return true
}

func total(layers []Layer, s []int) float64 {
	var h float64
	for i, l := range layers {
		h += l.hits(s[i])
	}
	return h
}

// fits says whether s is a split of layers within cfg's budget.
func fits(cfg Config, layers []Layer, s []int) bool {
	if len(s) != len(layers) {
		return false
	}
	used := 0
	for i, l := range layers {
		if s[i] < cfg.MinEntries {
			return false
		}
		used += l.Nodes * s[i]
	}
	return used <= cfg.Budget
}
