package sim

import "math"

// replicateHotKeys returns base with extra upper-layer copies for every key
// whose read rate, at the rate the system can sustain, exceeds half a cache
// node's throughput. Theorem 1 of the paper (§3.2) guarantees DistCache's
// throughput only while max_i p_i·R ≤ T̃/2: under Zipf-0.99 over 10^8 keys
// the hottest key alone draws 4.8% of all queries, so with one copy per
// layer two cache nodes would cap the whole system. A key that needs c
// copies gets them on its spine owner and the next members clockwise on the
// spine ring (partmap.Placement.Replicas), so the copies follow the same
// consistent hashing as everything else and the power-of-k router chooses
// among all of them. Each extra copy costs one more invalidation and update
// per write, so the copy count follows the sustainable rate, which writes
// lower: the search iterates until that rate and the copies agree.
func (m *model) replicateHotKeys(base *plan) *plan {
	half := float64(m.cfg.ServersPerRack) / 2
	readShare := 1 - m.cfg.WriteRatio
	p := base
	rate := math.Inf(1)
	for range 8 {
		next := m.serverBound(p)
		if next >= rate*(1-1e-9) && p != base {
			break
		}
		rate = next
		p = newPlan(len(base.holders))
		var spines []int
		for k, h := range base.holders {
			need := int(math.Ceil(m.prob[k] * readShare * rate / half))
			if need <= len(h) {
				p.holders[k] = h
				continue
			}
			leafCopies := 0
			for _, v := range h {
				if int(v) >= m.cfg.Spines {
					leafCopies++
				}
			}
			spines = m.place.Replicas(spineLayer, m.keys[k], need-leafCopies, spines[:0])
			for _, v := range spines {
				p.add(int32(k), int32(v))
			}
			for _, v := range h {
				if int(v) >= m.cfg.Spines {
					p.add(int32(k), v)
				}
			}
		}
	}
	return p
}

// serverBound is the throughput the storage servers allow under plan p,
// whatever the caches do: cached reads never reach a server.
func (m *model) serverBound(p *plan) float64 {
	l := m.loads(p)
	clear(l.cache)
	r, _ := m.limit(l)
	return r
}
