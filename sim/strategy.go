package sim

import (
	"fmt"
	"math"

	"github.com/distcache/distcache/placement/partmap"
)

// Strategy is a way of using the cache nodes (§6.1, "Comparison").
type Strategy string

// The strategies compared by the simulator.
const (
	// NoCache caches nothing: every query goes to its storage server.
	NoCache Strategy = "nocache"
	// Partition is CachePartition: each hot key is cached once, by the leaf
	// cache of its storage rack; the paper notes it performs as NetCache in
	// every rack.
	Partition Strategy = "partition"
	// Replication is CacheReplication: the hottest keys are replicated on
	// every spine node and reads are spread evenly over the copies; the leaf
	// of each rack caches the rack's hottest keys.
	Replication Strategy = "replication"
	// DistCache caches the hottest keys of each node's partition in both
	// layers and routes every read by power-of-two-choices on the loads the
	// senders learn from telemetry: plain DistCache, one copy per layer.
	DistCache Strategy = "distcache"
	// Adaptive is DistCache with the copies of each hot key decided by
	// cost and benefit (package copies): none for a key whose writes
	// dominate, fewer than one per layer where coherence work limits a
	// storage server, more where one key's reads exceed half a node.
	Adaptive Strategy = "adaptive"
	// Optimal keeps Adaptive's placement but splits reads by the max-flow
	// optimum of §3.2: the physical limit of that placement.
	Optimal Strategy = "optimal"
)

// Strategies lists every strategy in report order.
var Strategies = []Strategy{NoCache, Partition, Replication, DistCache, Adaptive, Optimal}

// plan says, for each exact rank below len(holders), which cache nodes hold
// the key and which fraction of its reads each serves.
type plan struct {
	holders [][]int32
	split   [][]float64
}

func newPlan(ranks int) *plan {
	return &plan{holders: make([][]int32, ranks), split: make([][]float64, ranks)}
}

// add records that node v holds rank k.
func (p *plan) add(k, v int32) {
	p.holders[k] = append(p.holders[k], v)
}

// splitEvenly sends every key's reads evenly to its copies.
func (p *plan) splitEvenly() {
	for k, h := range p.holders {
		if len(h) == 0 {
			continue
		}
		s := make([]float64, len(h))
		for i := range s {
			s[i] = 1 / float64(len(h))
		}
		p.split[k] = s
	}
}

// cachedRanks is one past the largest rank any node in sets holds.
func cachedRanks(sets ...[][]int32) int {
	n := 0
	for _, set := range sets {
		for _, ranks := range set {
			for _, k := range ranks {
				n = max(n, int(k)+1)
			}
		}
	}
	return n
}

// placement returns the cache contents of strategy s without the read split.
func (m *model) placement(s Strategy) *plan {
	c := m.cfg.CachePerNode
	leafSets := m.hottest(c, func(k int) int32 { return m.leafNode(m.leaf[k]) })
	switch s {
	case NoCache:
		return newPlan(0)
	case Partition:
		p := newPlan(cachedRanks(leafSets))
		addSets(p, leafSets)
		return p
	case Replication:
		p := newPlan(max(cachedRanks(leafSets), min(c, len(m.keys))))
		for v := range m.cfg.Spines {
			if m.member(v).State == partmap.Failed {
				continue
			}
			for k := range min(c, len(m.keys)) {
				p.add(int32(k), int32(v))
			}
		}
		addSets(p, leafSets)
		return p
	default:
		spineSets := m.hottest(c, func(k int) int32 { return m.spine[k] })
		p := newPlan(cachedRanks(spineSets, leafSets))
		addSets(p, spineSets)
		addSets(p, leafSets)
		return p
	}
}

func addSets(p *plan, sets [][]int32) {
	for v, ranks := range sets {
		for _, k := range ranks {
			p.add(k, int32(v))
		}
	}
}

// loads is the work each cache node and storage server does per unit of
// offered query rate.
type loads struct {
	cache  []float64
	server []float64
}

// loads computes the per-unit-rate work of every node under plan p, with
// the cost model of Config.CoherenceCost for writes.
func (m *model) loads(p *plan) loads {
	w, gamma := m.cfg.WriteRatio, m.cfg.CoherenceCost
	l := loads{cache: make([]float64, m.nodes()), server: make([]float64, m.cfg.Servers())}
	tail := m.tailMass / float64(len(l.server))
	for s := range l.server {
		l.server[s] = tail
	}
	for k, pk := range m.prob {
		srv := m.server[k]
		var h []int32
		if k < len(p.holders) {
			h = p.holders[k]
		}
		if len(h) == 0 {
			l.server[srv] += pk
			continue
		}
		l.server[srv] += pk * w * (1 + gamma*float64(len(h)))
		for i, v := range h {
			share := 1 / float64(len(h)) // until a split is chosen
			if p.split[k] != nil {
				share = p.split[k][i]
			}
			l.cache[v] += pk*(1-w)*share + 2*pk*w
		}
	}
	return l
}

// limit is the largest offered rate at which no node is over capacity, in
// units of one server's throughput, and the node that limits it.
func (m *model) limit(l loads) (float64, string) {
	best, who := math.Inf(1), ""
	capCache := float64(m.cfg.ServersPerRack)
	for v, x := range l.cache {
		if x > 0 && capCache/x < best {
			best, who = capCache/x, "cache "+m.member(v).Name
		}
	}
	for s, x := range l.server {
		if x > 0 && 1/x < best {
			best = 1 / x
			rack, shard := s/m.cfg.ServersPerRack, s%m.cfg.ServersPerRack
			who = fmt.Sprintf("server %s", m.pmap.Storage.Racks[rack].Shards[shard].Name)
		}
	}
	return best, who
}
