package sim

import "fmt"

// Result is one strategy's throughput at one point of an experiment.
type Result struct {
	Experiment string
	// X is the experiment's variable (skew, cache size, racks, write ratio
	// or time).
	X        float64
	Strategy Strategy
	// Throughput is the largest offered rate at which no cache node and no
	// storage server is over capacity, in units of one server's throughput.
	Throughput float64
	// Bottleneck names the node that limits Throughput.
	Bottleneck string
}

// Evaluate computes the throughput of each strategy for cfg.
func Evaluate(cfg Config, strategies []Strategy) ([]Result, error) {
	m, err := newModel(cfg)
	if err != nil {
		return nil, err
	}
	return m.evaluate(strategies)
}

func (m *model) evaluate(strategies []Strategy) ([]Result, error) {
	var adaptive *plan // Adaptive and Optimal share one placement
	out := make([]Result, 0, len(strategies))
	for _, s := range strategies {
		var p *plan
		switch s {
		case NoCache, Partition, Replication:
			p = m.placement(s)
			p.splitEvenly()
		case DistCache, Adaptive, Optimal:
			if s == DistCache {
				p = m.placement(DistCache)
			} else {
				if adaptive == nil {
					var err error
					if adaptive, err = m.adaptivePlacement(); err != nil {
						return nil, err
					}
				}
				p = &plan{holders: adaptive.holders}
			}
			p.split = make([][]float64, len(p.holders))
			if s == Optimal {
				m.optimalSplit(p)
			} else if err := m.routedSplit(p); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("cannot evaluate unknown strategy %q", s)
		}
		thr, who := m.limit(m.loads(p))
		out = append(out, Result{Strategy: s, Throughput: thr, Bottleneck: who})
	}
	return out, nil
}
