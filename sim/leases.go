package sim

import (
	"fmt"
	"time"
)

// LeaseLoad is what serving leases granted by the shims (package
// dataplane/lease) cost a configuration in messages. A cache node holds a
// lease from every storage shard whose keys it caches, and renews it a
// number of times per lease when no other message carries the renewal;
// each renewal is a request and a grant. The cache contents are
// DistCache's steady state: every node holds the hottest keys of its
// partition (CachePerNode of them).
type LeaseLoad struct {
	Nodes, Shards int
	// Pairs are the (cache node, shard) pairs in which the node caches at
	// least one of the shard's keys: one lease each.
	Pairs int
	// NodeMaxPairs and ShardMaxPairs are the most leases one node holds
	// and one shard grants.
	NodeMaxPairs, ShardMaxPairs int
	// Lease is the lease's length, Renewals the renewals per lease.
	Lease    time.Duration
	Renewals int
}

// perSecond is the messages a second of pairs leases: a request and a
// grant per renewal.
func (l LeaseLoad) perSecond(pairs int) float64 {
	return 2 * float64(pairs) * float64(l.Renewals) / l.Lease.Seconds()
}

// Total is the lease messages a second in the whole cluster.
func (l LeaseLoad) Total() float64 { return l.perSecond(l.Pairs) }

// NodeMax is the lease messages a second of the busiest cache node.
func (l LeaseLoad) NodeMax() float64 { return l.perSecond(l.NodeMaxPairs) }

// ShardMax is the lease messages a second of the busiest shard.
func (l LeaseLoad) ShardMax() float64 { return l.perSecond(l.ShardMaxPairs) }

// Leases computes cfg's lease load for leases of length renewed renewals
// times each.
func Leases(cfg Config, length time.Duration, renewals int) (LeaseLoad, error) {
	if length <= 0 || renewals <= 0 {
		return LeaseLoad{}, fmt.Errorf("cannot count leases: length %v, %d renewals per lease", length, renewals)
	}
	m, err := newModel(cfg)
	if err != nil {
		return LeaseLoad{}, err
	}
	p := m.placement(DistCache)
	l := LeaseLoad{Nodes: m.nodes(), Shards: cfg.Servers(), Lease: length, Renewals: renewals}
	seen := make(map[[2]int32]bool)
	perNode := make([]int, l.Nodes)
	perShard := make([]int, l.Shards)
	for k, holders := range p.holders {
		for _, v := range holders {
			pair := [2]int32{v, m.server[k]}
			if seen[pair] {
				continue
			}
			seen[pair] = true
			perNode[v]++
			perShard[m.server[k]]++
		}
	}
	l.Pairs = len(seen)
	for _, n := range perNode {
		l.NodeMaxPairs = max(l.NodeMaxPairs, n)
	}
	for _, n := range perShard {
		l.ShardMaxPairs = max(l.ShardMaxPairs, n)
	}
	return l, nil
}
