package routing

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// Closed-loop toy of DistCache's two cache layers: every query is routed by a
// policy, the chosen node's LoadMeter counts it, and the reply (carrying the
// node's current rate) is fed back to the sender's LoadTable after a fixed
// delay measured in queries.

const (
	loopLayerNodes = 8
	loopKeys       = 200
	loopQueries    = 1_000_000
	loopZipf       = 0.99
	loopTick       = int64(1000)      // ns of virtual time per query: 1M qps in aggregate
	loopWindow     = int64(1_000_000) // LoadMeter window: ~62 queries per node
)

type loopPolicy int

const (
	policyLayer0 loopPolicy = iota // always the layer-0 copy
	policyRandom                   // uniformly random copy, no load information
	policyPower2                   // DistCache: less loaded copy
)

func (p loopPolicy) String() string {
	return [...]string{"layer0", "random", "power-of-2"}[p]
}

type loopWorkload struct {
	cdf   []float64     // cumulative key popularity
	cands [][]Candidate // per key: one candidate per layer
	keys  []int         // the query stream (shared by all policies)
}

func newLoopWorkload() *loopWorkload {
	w := &loopWorkload{cdf: make([]float64, loopKeys), cands: make([][]Candidate, loopKeys)}
	sum := 0.0
	for k := range loopKeys {
		sum += 1 / math.Pow(float64(k+1), loopZipf)
		w.cdf[k] = sum
	}
	for k := range w.cdf {
		w.cdf[k] /= sum
	}
	place := rand.New(rand.NewPCG(2, 2)) // independent "hash" per layer
	for k := range w.cands {
		w.cands[k] = []Candidate{
			{Node: NodeID(place.IntN(loopLayerNodes))},
			{Node: NodeID(loopLayerNodes + place.IntN(loopLayerNodes))},
		}
	}
	draw := rand.New(rand.NewPCG(3, 3))
	w.keys = make([]int, loopQueries)
	for i := range w.keys {
		w.keys[i] = min(sort.SearchFloat64s(w.cdf, draw.Float64()), loopKeys-1)
	}
	return w
}

// run routes the query stream and returns the max/mean ratio of the number of
// queries each node served.
func (w *loopWorkload) run(t *testing.T, policy loopPolicy, delay int) float64 {
	t.Helper()
	const nodes = 2 * loopLayerNodes
	tbl := mustTable(t, AgingConfig{StaleAfter: loopWindow, HalfLife: loopWindow})
	router := NewRouter(tbl, 11)
	coin := rand.New(rand.NewPCG(5, 5))
	meters := make([]*LoadMeter, nodes)
	for i := range meters {
		meters[i] = mustMeter(t, loopWindow)
	}
	type reply struct {
		node NodeID
		load float64
	}
	inflight := make([]reply, delay+1) // ring of replies not yet delivered
	served := make([]float64, nodes)
	for i, key := range w.keys {
		now := int64(i) * loopTick
		cands := w.cands[key]
		var pick int
		switch policy {
		case policyLayer0:
			pick = 0
		case policyRandom:
			pick = coin.IntN(len(cands))
		case policyPower2:
			pick = router.Choose(cands, now)
		}
		node := cands[pick].Node
		served[node]++
		if policy != policyPower2 {
			continue // static policies ignore telemetry
		}
		meters[node].Add(1, now)
		// The node stamps its current load into the reply, which arrives
		// delay queries later.
		slot := i % len(inflight)
		inflight[slot] = reply{node, meters[node].Rate(now)}
		if i >= delay {
			r := inflight[(i-delay)%len(inflight)]
			tbl.Observe(r.node, r.load, now)
		}
	}
	mean := float64(loopQueries) / nodes
	ratio := slices.Max(served) / mean
	t.Logf("%-10s delay=%-3d max/mean=%.3f served=%v", policy, delay, ratio, served)
	if policy == policyPower2 {
		st := router.Stats()
		t.Logf("           router stats %+v", st)
		if st.Choices != loopQueries {
			t.Errorf("Choices = %d, want %d", st.Choices, loopQueries)
		}
	}
	return ratio
}

// optimum returns the best max/mean ratio any routing policy could reach on
// the stream: the minimum over fractional assignments of key traffic to its
// two copies of the maximum node load. Each key is an edge between its two
// candidate nodes, and by the max-density-subgraph duality that minimum equals
// the maximum over node subsets S of (traffic of keys with both copies in S)/|S|.
// With 16 nodes all 2^16 subsets are enumerated.
func (w *loopWorkload) optimum() float64 {
	const nodes = 2 * loopLayerNodes
	traffic := make([]float64, loopKeys)
	for _, k := range w.keys {
		traffic[k]++
	}
	var masks [loopKeys]uint32
	for k, c := range w.cands {
		masks[k] = 1<<c[0].Node | 1<<c[1].Node
	}
	best := 0.0
	for s := uint32(1); s < 1<<nodes; s++ {
		inside := 0.0
		for k, m := range masks {
			if m&s == m {
				inside += traffic[k]
			}
		}
		best = max(best, inside/float64(bits.OnesCount32(s)))
	}
	return best / (float64(loopQueries) / nodes)
}

// TestClosedLoopBalances shows that power-of-two routing with stale,
// piggybacked loads balances the two layers better than static routing to
// one layer and than load-oblivious random choice between the two copies.
func TestClosedLoopBalances(t *testing.T) {
	w := newLoopWorkload()
	// The hottest key alone bounds what any policy can do: its two copies
	// must together serve its share of the queries.
	t.Logf("hottest key share %.3f of queries (mean node share %.4f)", w.cdf[0], 1.0/(2*loopLayerNodes))

	opt := w.optimum()
	t.Logf("optimal    max/mean=%.3f (fractional lower bound for any policy)", opt)

	layer0 := w.run(t, policyLayer0, 0)
	random := w.run(t, policyRandom, 0)
	if !(random < layer0) {
		t.Errorf("sanity: random (%.3f) should beat layer0 (%.3f)", random, layer0)
	}
	for _, delay := range []int{0, 16, 64} {
		p2 := w.run(t, policyPower2, delay)
		if p2 < opt*(1-1e-9) {
			t.Errorf("delay %d: power-of-2 max/mean %.3f beats the optimum %.3f: bound is wrong", delay, p2, opt)
		}
		if !(p2 < random && p2 < layer0) {
			t.Errorf("delay %d: power-of-2 max/mean %.3f, want below random %.3f and layer0 %.3f",
				delay, p2, random, layer0)
		}
		// "Clearly": power-of-2 closes most of random's gap to the optimum.
		if p2-opt > (random-opt)/2 {
			t.Errorf("delay %d: power-of-2 is %.3f above the optimum, random %.3f: want at most half",
				delay, p2-opt, random-opt)
		}
	}
}
