package sim

import "math"

// optimalSplit sets p's read split to the optimum of §3.2: the fractional
// matching that minimises the most loaded cache node's utilisation, given
// which nodes hold which keys. It bisects on the utilisation λ and checks
// each λ with a max-flow from the keys (supplying their read rate) through
// the holders (each accepting λ·capacity minus the load it carries anyway)
// to a sink.
func (m *model) optimalSplit(p *plan) {
	w := m.cfg.WriteRatio
	p.splitEvenly()
	// Load that does not depend on the split: single-copy reads and the
	// coherence work of writes.
	fixed := make([]float64, m.nodes())
	var keys []int
	total := 0.0
	for k, h := range p.holders {
		if len(h) == 0 {
			continue
		}
		pk := m.prob[k]
		for _, v := range h {
			fixed[v] += 2 * pk * w
		}
		if len(h) == 1 {
			fixed[h[0]] += pk * (1 - w)
			continue
		}
		keys = append(keys, k)
		total += pk * (1 - w)
	}
	if len(keys) == 0 || total == 0 {
		return
	}
	capacity := float64(m.cfg.ServersPerRack)
	lo := 0.0
	for _, f := range fixed {
		lo = max(lo, f/capacity)
	}
	hi := lo + total/capacity
	g := newMatching(m, p, keys, fixed, capacity)
	for range 60 {
		mid := (lo + hi) / 2
		if g.maxflow(mid) >= total*(1-1e-12) {
			hi = mid
		} else {
			lo = mid
		}
		if hi-lo <= hi*1e-9 {
			break
		}
	}
	g.maxflow(hi)
	g.setSplit(p)
}

// matching is the flow network of optimalSplit, solved with Dinic's
// algorithm: source → key (its read rate) → holder (unbounded) → sink
// (the holder's spare capacity at utilisation λ).
type matching struct {
	n         int
	head      []int32
	edges     []flowEdge
	level     []int32
	iter      []int32
	source    int32
	sink      int32
	keys      []int
	keyEdge   []int32 // first key→holder edge of each key
	sinkEdge  []int32 // holder→sink edge of each cache node
	fixed     []float64
	capacity  float64
	m         *model
	firstNode int32
	queue     []int32
}

type flowEdge struct {
	to   int32
	next int32
	cap  float64
	flow float64
}

func newMatching(m *model, p *plan, keys []int, fixed []float64, capacity float64) *matching {
	nodes := m.nodes()
	g := &matching{
		n: len(keys) + nodes + 2, keys: keys, fixed: fixed, capacity: capacity, m: m,
		source: 0, firstNode: int32(len(keys) + 1),
	}
	g.sink = int32(g.n - 1)
	g.head = make([]int32, g.n)
	for i := range g.head {
		g.head[i] = -1
	}
	w := m.cfg.WriteRatio
	for i, k := range keys {
		g.addEdge(g.source, int32(i+1), m.prob[k]*(1-w))
		g.keyEdge = append(g.keyEdge, int32(len(g.edges)))
		for _, v := range p.holders[k] {
			g.addEdge(int32(i+1), g.firstNode+v, math.Inf(1))
		}
	}
	for v := range nodes {
		g.sinkEdge = append(g.sinkEdge, int32(len(g.edges)))
		g.addEdge(g.firstNode+int32(v), g.sink, 0)
	}
	g.level = make([]int32, g.n)
	g.iter = make([]int32, g.n)
	return g
}

func (g *matching) addEdge(from, to int32, c float64) {
	g.edges = append(g.edges, flowEdge{to: to, next: g.head[from], cap: c})
	g.head[from] = int32(len(g.edges) - 1)
	g.edges = append(g.edges, flowEdge{to: from, next: g.head[to]})
	g.head[to] = int32(len(g.edges) - 1)
}

// maxflow resets the network for utilisation lambda and returns its
// maximum flow.
func (g *matching) maxflow(lambda float64) float64 {
	for i := range g.edges {
		g.edges[i].flow = 0
	}
	for v, e := range g.sinkEdge {
		g.edges[e].cap = max(0, lambda*g.capacity-g.fixed[v])
	}
	total := 0.0
	for g.bfs() {
		copy(g.iter, g.head)
		for {
			f := g.dfs(g.source, math.Inf(1))
			if f <= 0 {
				break
			}
			total += f
		}
	}
	return total
}

const flowEpsilon = 1e-15

func (g *matching) bfs() bool {
	for i := range g.level {
		g.level[i] = -1
	}
	g.level[g.source] = 0
	g.queue = append(g.queue[:0], g.source)
	for qi := 0; qi < len(g.queue); qi++ {
		u := g.queue[qi]
		for e := g.head[u]; e >= 0; e = g.edges[e].next {
			ed := &g.edges[e]
			if g.level[ed.to] < 0 && ed.cap-ed.flow > flowEpsilon {
				g.level[ed.to] = g.level[u] + 1
				g.queue = append(g.queue, ed.to)
			}
		}
	}
	return g.level[g.sink] >= 0
}

// dfs pushes a blocking-flow augmenting path; the network has depth 3, so
// the recursion is shallow.
func (g *matching) dfs(u int32, f float64) float64 {
	if u == g.sink {
		return f
	}
	for ; g.iter[u] >= 0; g.iter[u] = g.edges[g.iter[u]].next {
		e := g.iter[u]
		ed := &g.edges[e]
		if g.level[ed.to] != g.level[u]+1 || ed.cap-ed.flow <= flowEpsilon {
			continue
		}
		if d := g.dfs(ed.to, min(f, ed.cap-ed.flow)); d > 0 {
			ed.flow += d
			g.edges[e^1].flow -= d
			return d
		}
	}
	return 0
}

// setSplit turns the current flow into p's read split.
func (g *matching) setSplit(p *plan) {
	for i, k := range g.keys {
		h := p.holders[k]
		total := 0.0
		flows := make([]float64, len(h))
		for e := g.head[int32(i+1)]; e >= 0; e = g.edges[e].next {
			ed := g.edges[e]
			if ed.to == g.source || ed.flow <= 0 {
				continue
			}
			v := ed.to - g.firstNode
			for j, hv := range h {
				if hv == v {
					flows[j] += ed.flow
				}
			}
			total += ed.flow
		}
		if total <= 0 {
			continue
		}
		for j := range flows {
			p.split[k][j] = flows[j] / total
		}
	}
}
