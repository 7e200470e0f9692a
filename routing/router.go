package routing

import (
	"math"
	"math/rand/v2"
)

// Candidate is one node that caches the queried key (one per cache layer).
type Candidate struct {
	Node NodeID
	// Capacity is the node's relative capacity (> 0); loads are compared as
	// load/Capacity. 0 means 1; a negative or NaN capacity is also treated
	// as 1.
	Capacity float64
	// Remote marks a node in another zone than the sender: with a table
	// made WithRemoteMargin, Choose prefers the others (zones.go).
	Remote bool
}

// Stats are monotonically increasing counters. Each counter lives where it is
// incremented: Router.Stats fills Choices, Ties and AllFailed; LoadTable.Stats
// fills IgnoredObservations.
type Stats struct {
	// Choices counts Choose calls that returned a candidate index.
	Choices uint64
	// Ties counts Choose calls whose minimum normalised load was shared by
	// two or more non-failed candidates (resolved at random).
	Ties uint64
	// AllFailed counts Choose calls that returned -1: every candidate was
	// failed, or cands was empty.
	AllFailed uint64
	// PassedStalled counts Choose calls that passed over a stalled
	// candidate (outstanding.go) for one that was not; AllStalled those
	// whose every non-failed candidate was stalled (the one caught up most
	// recently was chosen).
	PassedStalled, AllStalled uint64
	// IgnoredObservations counts Observe calls that were dropped: NaN,
	// negative or infinite load, or node >= MaxNodes.
	IgnoredObservations uint64
}

// tieEpsilon is the relative tolerance under which two normalised loads are
// considered equal.
const tieEpsilon = 1e-12

// Router chooses among the candidates of a query using the loads in a shared
// LoadTable (power-of-k-choices, DistCache §3.1).
//
// A Router is NOT safe for concurrent use: it owns a random source for
// tie-breaking and plain counters. Use one Router per goroutine (or per
// simulated client); many Routers may share one LoadTable.
type Router struct {
	table *LoadTable
	rng   *rand.Rand
	stats Stats
}

// NewRouter returns a Router reading loads from table, with its tie-break
// source seeded deterministically from seed (PCG). It panics if table is nil.
func NewRouter(table *LoadTable, seed uint64) *Router {
	if table == nil {
		panic("routing: NewRouter called with a nil *LoadTable")
	}
	return &Router{
		table: table,
		rng:   rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
	}
}

// Choose returns the index in cands of the candidate with the lowest
// normalised load (aged load at now, divided by capacity), skipping failed
// nodes and, while any candidate is not stalled, stalled ones (a table
// made WithStallAfter; outstanding.go); when every candidate left is
// stalled it returns the one caught up most recently. Ties (normalised
// loads within a relative 1e-12) are broken uniformly at random among the
// tied candidates. It returns -1 if cands is empty or every candidate is
// failed. Choose does not allocate.
func (r *Router) Choose(cands []Candidate, now int64) int {
	t := r.table
	d := t.chunks()
	stallAfter := t.stallAfter
	best, stalled := -1, -1
	var bestLoad float64
	var bestRemote bool // cands[best] is Remote, under WithRemoteMargin
	var stalledAt int64 // caught-up time of cands[stalled]
	var tied uint64     // candidates sharing the current minimum
	for i := range cands {
		c := &cands[i]
		var load float64
		if e := lookup(d, c.Node); e != nil {
			if e.failed.Load() != 0 {
				continue
			}
			if stallAfter != 0 && e.inflight.Load() > 0 && now-e.caughtUp.Load() > stallAfter { // LoadTable.stalled, inlined: keep in sync
				if at := e.caughtUp.Load(); stalled < 0 || at > stalledAt {
					stalled, stalledAt = i, at
				}
				continue
			}
			// Hand-inlined copies of entry.read's fast path and of
			// LoadTable.aged (both exceed the inliner's budget; inlining
			// saves ~25% of Choose). Keep them in sync with those.
			seq := e.seq.Load()
			load = math.Float64frombits(e.load.Load())
			stamp := e.stamp.Load()
			if seq&1 != 0 || e.seq.Load() != seq {
				load, stamp = e.readSlow()
			}
			if age := now - stamp - t.aging.StaleAfter; age > 0 && t.decayPerNs != 0 && load != 0 {
				load *= math.Exp(-float64(age) * t.decayPerNs)
			}
		}
		if capacity := c.Capacity; capacity > 0 && capacity != 1 {
			load /= capacity
		}
		remote := c.Remote && t.remoteFactor != 0
		if remote {
			load *= t.remoteFactor
		}
		switch {
		case best < 0:
			best, bestLoad, tied, bestRemote = i, load, 1, remote
		case remote != bestRemote && math.Abs(load-bestLoad) <= tieEpsilon*max(load, bestLoad):
			// A tie across zones goes to the local candidate (zones.go).
			if bestRemote {
				best, bestLoad, tied, bestRemote = i, load, 1, false
			}
		case math.Abs(load-bestLoad) <= tieEpsilon*max(load, bestLoad):
			// Reservoir sampling: the k-th tied candidate replaces the
			// current pick with probability 1/k, so each of the k tied
			// candidates ends up chosen with probability 1/k.
			tied++
			if r.rng.Uint64N(tied) == 0 {
				best = i
			}
			bestLoad = min(bestLoad, load)
		case load < bestLoad:
			best, bestLoad, tied, bestRemote = i, load, 1, remote
		}
	}
	switch {
	case best < 0 && stalled < 0:
		r.stats.AllFailed++
		return -1
	case best < 0:
		r.stats.Choices++
		r.stats.AllStalled++
		return stalled
	case stalled >= 0:
		r.stats.PassedStalled++
	}
	r.stats.Choices++
	if tied > 1 {
		r.stats.Ties++
	}
	return best
}

// Stats returns this Router's counters (Choices, Ties, AllFailed).
func (r *Router) Stats() Stats { return r.stats }
