package sim

import (
	"fmt"

	"github.com/distcache/distcache/placement/copies"
)

// adaptivePlacement gives each hot key the copies package copies decides
// for it (0, 1, 2 or more, by cost and benefit), with the same decision
// code the control loop runs. The candidates are the hottest keys that
// fit the cache nodes with one copy each; every other exact rank, and the
// tail, load their servers as uncached keys do.
func (m *model) adaptivePlacement() (*plan, error) {
	w := m.cfg.WriteRatio
	n := min(len(m.keys), m.cfg.CachePerNode*m.nodes())
	keys := make([]copies.Key, n)
	base := make([]float64, m.cfg.Servers())
	for s := range base {
		base[s] = m.tailMass / float64(len(base))
	}
	for k, pk := range m.prob {
		if k >= n {
			base[m.server[k]] += pk
			continue
		}
		keys[k] = copies.Key{Name: m.keys[k], Reads: pk * (1 - w), Writes: pk * w, Server: int(m.server[k])}
	}
	d, err := copies.Decide(m.copiesModel(), keys, base, simNodes{m})
	if err != nil {
		return nil, fmt.Errorf("cannot place simulated keys adaptively: %w", err)
	}
	p := newPlan(n)
	for k, h := range d.Holders {
		for _, v := range h {
			p.add(int32(k), int32(v))
		}
	}
	return p, nil
}

// copiesModel is the simulator's cost model in the package copies' terms:
// a cache node serves a rack's throughput, a server one unit, and a copy
// costs its node the invalidation and the update of every write.
func (m *model) copiesModel() copies.Model {
	maxCopies := m.cfg.MaxCopies
	if maxCopies == 0 {
		maxCopies = m.cfg.Spines + 1
	}
	return copies.Model{
		NodeCapacity:   float64(m.cfg.ServersPerRack),
		ServerCapacity: 1,
		CoherenceCost:  m.cfg.CoherenceCost,
		NodeWriteCost:  2,
		MaxCopies:      maxCopies,
		Slots:          m.cfg.CachePerNode,
	}
}

// simNodes presents the model's cache nodes (spines first, then leaves)
// to package copies.
type simNodes struct{ m *model }

func (n simNodes) Count() int { return n.m.nodes() }

// Owners appends key's spine owner and its rack's leaf, skipping a layer
// without an owning member.
func (n simNodes) Owners(key string, dst []int) []int {
	if v := n.m.place.Owner(spineLayer, key); v >= 0 {
		dst = append(dst, v)
	}
	if v := n.m.place.Owner(leafLayer, key); v >= 0 {
		dst = append(dst, int(n.m.leafNode(int32(v))))
	}
	return dst
}

// Extra appends the spine ring successors of key's spine owner.
func (n simNodes) Extra(key string, more int, dst []int) []int {
	start := len(dst)
	dst = n.m.place.Replicas(spineLayer, key, more+1, dst)
	if len(dst) > start {
		dst = append(dst[:start], dst[start+1:]...) // the owner is already a copy
	}
	return dst
}
