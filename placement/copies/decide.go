package copies

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Key is one hot key as the cache nodes (its reads) and the storage shims
// (its writes) report it.
type Key struct {
	// Name is the key.
	Name string
	// Reads and Writes are the key's rates, in the unit of the model's
	// capacities (operations per second in a running cluster, query
	// probabilities in the simulator).
	Reads, Writes float64
	// Server is the index of the storage server that stores the key.
	Server int
	// Now is the number of copies the key has under the decision in force
	// (0: not cached), for hysteresis.
	Now int
}

// Model is the cost model of Decide. Capacities and costs are in the unit
// of the keys' rates.
type Model struct {
	// NodeCapacity is the work a cache node serves.
	NodeCapacity float64
	// ServerCapacity is the work a storage server serves.
	ServerCapacity float64
	// CoherenceCost is the work a storage server does per cached copy of
	// a key for each write of it (γ): sending the invalidation and the
	// update and receiving both acknowledgements.
	CoherenceCost float64
	// NodeWriteCost is the work a copy costs its cache node per write: the
	// invalidation and the update (2 in the data plane).
	NodeWriteCost float64
	// MaxCopies bounds the copies of one key (at least 1).
	MaxCopies int
	// Slots is the number of keys a cache node holds (0: no limit).
	Slots int
	// Hysteresis is the relative band around each threshold inside which
	// a key keeps the copies it has (0 ≤ Hysteresis < 1).
	Hysteresis float64
	// MaxRate, when positive, caps the rate factor at which the decision
	// is taken: a running cluster prepares for its load grown by MaxRate
	// at most, not for the most it could carry, so that a key gets no
	// copies that only a far larger load would need.
	MaxRate float64
}

// Validate reports the first unusable setting.
func (m Model) Validate() error {
	switch {
	case !(m.NodeCapacity > 0) || !(m.ServerCapacity > 0):
		return fmt.Errorf("invalid copies model: capacities must be positive (node %v, server %v)", m.NodeCapacity, m.ServerCapacity)
	case m.CoherenceCost < 0 || m.NodeWriteCost < 0:
		return fmt.Errorf("invalid copies model: costs must not be negative (coherence %v, node write %v)", m.CoherenceCost, m.NodeWriteCost)
	case m.MaxCopies < 1:
		return fmt.Errorf("invalid copies model: max copies %d is below 1", m.MaxCopies)
	case m.Slots < 0:
		return fmt.Errorf("invalid copies model: %d slots per node", m.Slots)
	case m.Hysteresis < 0 || m.Hysteresis >= 1:
		return fmt.Errorf("invalid copies model: hysteresis %v outside [0, 1)", m.Hysteresis)
	case m.MaxRate < 0 || math.IsNaN(m.MaxRate):
		return fmt.Errorf("invalid copies model: max rate %v is negative", m.MaxRate)
	}
	return nil
}

// Nodes says which cache nodes may hold a key. Node indexes run from 0 to
// Count()-1.
type Nodes interface {
	// Count is the number of cache nodes.
	Count() int
	// Owners appends to dst the key's owner in each cache layer, upper
	// layer first, one node per layer.
	Owners(key string, dst []int) []int
	// Extra appends to dst up to n more nodes, none of them an owner, for
	// copies beyond one per layer: the upper layer's ring successors of
	// the key's owner.
	Extra(key string, n int, dst []int) []int
}

// Decision is the outcome of Decide.
type Decision struct {
	// Holders lists, for each key in the order given, the cache nodes
	// that hold its copies; empty when it is not cached.
	Holders [][]int
	// Rate is the factor of the reported rates at which the decision was
	// taken: the most they can grow before the busiest storage server is
	// at capacity under it (+Inf when nothing limits it), or Model.MaxRate
	// if that is less.
	Rate float64
}

// Copies counts the keys of d by number of copies: n[c] keys have c
// copies, for c up to the largest.
func (d Decision) Copies() []int {
	var n []int
	for _, h := range d.Holders {
		for len(n) <= len(h) {
			n = append(n, 0)
		}
		n[len(h)]++
	}
	return n
}

// Decide chooses the copies of keys under model m. base gives each storage
// server's load that is not one of keys' (uncached keys, at the reported
// rates); its length is the number of servers. See the package comment
// for the rule.
func Decide(m Model, keys []Key, base []float64, nodes Nodes) (Decision, error) {
	if err := m.Validate(); err != nil {
		return Decision{}, err
	}
	if err := checkKeys(keys, base); err != nil {
		return Decision{}, fmt.Errorf("cannot decide copies: %w", err)
	}
	if len(keys) == 0 {
		return Decision{Rate: math.Inf(1)}, nil
	}
	s := newSearch(m, keys, base, nodes)
	if s.layers == 0 {
		return Decision{}, errors.New("cannot decide copies: keys have no cache owner")
	}
	rate := s.bisect()
	if m.MaxRate > 0 && rate > m.MaxRate && s.assign(m.MaxRate) {
		rate = m.MaxRate
	}
	s.assign(rate)
	return Decision{Holders: s.result(), Rate: rate}, nil
}

// search holds the per-key data of one Decide call and the state of the
// assignment at the rate being tried.
type search struct {
	m      Model
	keys   []Key
	base   []float64
	nodes  Nodes
	order  []int   // key indexes, hottest first
	cands  [][]int // owners, then the extra nodes once a key needs them
	owners []int   // how many of cands[i] are owners
	extra  []bool  // whether cands[i] has its extra nodes
	layers int     // owners per key

	// the assignment at the rate last tried
	held   [][]int   // nodes holding each key
	server []float64 // load per storage server
	node   []float64 // load per cache node, reads split evenly
	fixed  []float64 // load per cache node that the router cannot move
	total  float64   // load of all cache nodes
	slots  []int     // free slots per cache node
	next   []int     // scratch for placing one key
}

func newSearch(m Model, keys []Key, base []float64, nodes Nodes) *search {
	s := &search{
		m: m, keys: keys, base: base, nodes: nodes,
		order:  make([]int, len(keys)),
		cands:  make([][]int, len(keys)),
		owners: make([]int, len(keys)),
		extra:  make([]bool, len(keys)),
		held:   make([][]int, len(keys)),
		server: make([]float64, len(base)),
		node:   make([]float64, nodes.Count()),
		fixed:  make([]float64, nodes.Count()),
		slots:  make([]int, nodes.Count()),
	}
	for i, k := range keys {
		s.order[i] = i
		s.cands[i] = nodes.Owners(k.Name, nil)
		s.owners[i] = len(s.cands[i])
		s.layers = max(s.layers, s.owners[i])
	}
	slices.SortStableFunc(s.order, func(a, b int) int {
		return cmp.Compare(keys[b].Reads+keys[b].Writes, keys[a].Reads+keys[a].Writes)
	})
	return s
}

// candidates returns the nodes that may hold key i when it needs c copies:
// its owners, and beyond one per layer the extra nodes too, fetched the
// first time a key needs them.
func (s *search) candidates(i, c int) []int {
	if c > len(s.cands[i]) && !s.extra[i] && s.m.MaxCopies > len(s.cands[i]) {
		s.extra[i] = true
		s.cands[i] = s.nodes.Extra(s.keys[i].Name, s.m.MaxCopies-len(s.cands[i]), s.cands[i])
	}
	return s.cands[i]
}

// bisect returns the largest rate factor at which assign keeps every
// server within capacity (to a relative precision of 1e-6).
func (s *search) bisect() float64 {
	if s.assign(1) {
		lo, hi := 1.0, 2.0
		for s.assign(hi) {
			lo, hi = hi, hi*2
			if hi > 1e12 {
				return math.Inf(1)
			}
		}
		return s.narrow(lo, hi)
	}
	lo, hi := 0.5, 1.0
	for !s.assign(lo) {
		lo, hi = lo/2, lo
		if lo < 1e-12 {
			return 0
		}
	}
	return s.narrow(lo, hi)
}

// narrow bisects between a feasible lo and an infeasible hi.
func (s *search) narrow(lo, hi float64) float64 {
	for hi-lo > lo*1e-6 {
		mid := (lo + hi) / 2
		if s.assign(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// result copies the assignment out.
func (s *search) result() [][]int {
	out := make([][]int, len(s.keys))
	for i, h := range s.held {
		if len(h) > 0 {
			out[i] = slices.Clone(h)
		}
	}
	return out
}

// Rate is the rate factor at which holders — each key's cache nodes, in
// the order of keys, as Decision.Holders — keep every storage server and
// every cache node's unmovable load within capacity, and the nodes' total
// within theirs: the most the reported rates can grow under those copies
// (+Inf when nothing limits it). It lets a caller compare the copies it
// has with a new Decision on the same reports.
func Rate(m Model, keys []Key, base []float64, nodes Nodes, holders [][]int) (float64, error) {
	if err := m.Validate(); err != nil {
		return 0, err
	}
	if err := checkKeys(keys, base); err != nil {
		return 0, fmt.Errorf("cannot rate copies: %w", err)
	}
	if len(holders) != len(keys) {
		return 0, fmt.Errorf("cannot rate copies: %d holder lists for %d keys", len(holders), len(keys))
	}
	s := newSearch(m, keys, base, nodes)
	s.reset(1)
	for i, h := range holders {
		for _, v := range h {
			if v < 0 || v >= len(s.node) {
				return 0, fmt.Errorf("cannot rate copies: key %q on node %d of %d", keys[i].Name, v, len(s.node))
			}
		}
		s.held[i] = append(s.held[i][:0], h...)
		s.charge(i, 1, 1)
	}
	rate := math.Inf(1)
	limit := func(capacity, load float64) {
		if load > 0 {
			rate = min(rate, capacity/load)
		}
	}
	for _, l := range s.server {
		limit(m.ServerCapacity, l)
	}
	for _, l := range s.fixed {
		limit(m.NodeCapacity, l)
	}
	limit(m.NodeCapacity*float64(len(s.fixed)), s.total)
	return rate, nil
}

// checkKeys reports the first key on no server of base or with unusable
// rates.
func checkKeys(keys []Key, base []float64) error {
	for i, k := range keys {
		if k.Server < 0 || k.Server >= len(base) {
			return fmt.Errorf("key %q is on server %d of %d", k.Name, k.Server, len(base))
		}
		if k.Reads < 0 || k.Writes < 0 || math.IsNaN(k.Reads+k.Writes) {
			return fmt.Errorf("key %d (%q) has rates %v and %v", i, k.Name, k.Reads, k.Writes)
		}
	}
	return nil
}
