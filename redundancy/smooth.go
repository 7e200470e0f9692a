package redundancy

// DefaultSmoothRounds is Smoother.Rounds when zero.
const DefaultSmoothRounds = 3

// Smoother steadies the reports Plan decides from: each key's hits,
// summed over the nodes, and each of its shard's rates are the largest of
// the last Rounds rounds; a shard's load is the newest round's. Right
// after a key's copies change, only the nodes that held it for a whole
// interval report its hits, and one round's counts vary by more than the
// decision's hysteresis band: decided from single rounds, the copies would
// follow that noise, a map version each. A key's copies then shrink only
// once its rate has stayed low for Rounds rounds. A Smoother is not safe
// for concurrent use.
type Smoother struct {
	// Rounds is how many rounds a rate is kept (default
	// DefaultSmoothRounds).
	Rounds int
	past   []Reports // the last rounds, oldest first
}

// Add records round r and returns the smoothed reports.
func (s *Smoother) Add(r Reports) Reports {
	rounds := s.Rounds
	if rounds <= 0 {
		rounds = DefaultSmoothRounds
	}
	s.past = append(s.past, r)
	if len(s.past) > rounds {
		s.past = append(s.past[:0], s.past[len(s.past)-rounds:]...)
	}
	hits := map[string]float64{}
	shards := map[string]map[string]KeyRate{}
	for shard := range r.Shards {
		shards[shard] = map[string]KeyRate{}
	}
	for _, round := range s.past {
		sum := map[string]float64{}
		for _, node := range round.Hits {
			for _, k := range node {
				sum[k.Key] += k.Reads
			}
		}
		for key, v := range sum {
			hits[key] = max(hits[key], v)
		}
		for shard, sh := range round.Shards {
			keys, ok := shards[shard]
			if !ok {
				continue // not in the newest round: its shim did not answer
			}
			for _, k := range sh.Keys {
				old := keys[k.Key]
				keys[k.Key] = KeyRate{Key: k.Key, Reads: max(old.Reads, k.Reads), Writes: max(old.Writes, k.Writes)}
			}
		}
	}
	out := Reports{Shards: make(map[string]ShardReport, len(shards))}
	if len(hits) > 0 {
		node := make([]KeyRate, 0, len(hits))
		for key, v := range hits {
			node = append(node, KeyRate{Key: key, Reads: v})
		}
		out.Hits = [][]KeyRate{node}
	}
	for shard, keys := range shards {
		sr := ShardReport{Load: r.Shards[shard].Load}
		for _, k := range keys {
			sr.Keys = append(sr.Keys, k)
		}
		out.Shards[shard] = sr
	}
	return out
}
