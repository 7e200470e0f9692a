package driver

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/distcache/distcache/placement/partmap"
)

// Cluster is what the driver needs from the cluster besides the data path
// (which goes through the client library and the map file). Its methods may
// be called from more than one goroutine, never at once.
type Cluster interface {
	// Work returns every cache node's and storage shard's cumulative work
	// units and emulated capacity, freshly read. It must keep answering
	// while a member is killed (listing the member's last known count, or
	// leaving it out).
	Work(ctx context.Context) ([]Work, error)
	// Kill stops a cache node abruptly (SIGKILL); Restart starts it again
	// (empty cache). They inject a FailKill failure.
	Kill(ctx context.Context, member string) error
	Restart(ctx context.Context, member string) error
	// Pause stops a cache node's process (SIGSTOP) without ending it;
	// Resume continues it (SIGCONT). They inject a FailPause failure.
	Pause(ctx context.Context, member string) error
	Resume(ctx context.Context, member string) error
	// Slow delays every datagram a cache node's data-plane socket sends by
	// delay; Unslow ends the delay. They inject a FailSlow failure.
	Slow(ctx context.Context, member string, delay time.Duration) error
	Unslow(ctx context.Context, member string) error
}

// Work is one member's cumulative work.
type Work struct {
	Name     string  // member name (cache node) or shard name (storage)
	Node     bool    // true for a cache node, false for a storage shard
	Layer    string  // the node's layer ("" for shards)
	Units    uint64  // cumulative work units done so far
	Capacity float64 // emulated units per second; 0 = unlimited
	// Coherence is a shard's cumulative invalidations + updates sent (0
	// for nodes).
	Coherence uint64
}

// workKey identifies a member across Work snapshots.
type workKey struct {
	node bool
	name string
}

// loadWindow turns two Work snapshots elapsed apart into the loads of the
// nodes and the shards, ordered as the map lists them (unknown names last,
// by name), and the coherence operations in between. A member missing from
// after (killed) is left out. A counter that went down (a restarted
// process starts from 0) counts from 0.
func loadWindow(before, after []Work, elapsed time.Duration, m *partmap.Map) (nodes, shards []Load, coherence uint64) {
	prev := make(map[workKey]Work, len(before))
	for _, w := range before {
		prev[workKey{w.Node, w.Name}] = w
	}
	secs := elapsed.Seconds()
	for _, w := range after {
		p := prev[workKey{w.Node, w.Name}]
		units, coh := delta(w.Units, p.Units), delta(w.Coherence, p.Coherence)
		l := Load{Name: w.Name, Units: units, Capacity: w.Capacity}
		if secs > 0 {
			l.UnitsPerSecond = float64(units) / secs
		}
		if w.Capacity > 0 {
			l.Utilization = l.UnitsPerSecond / w.Capacity
		}
		if w.Node {
			l.Layer = w.Layer
			nodes = append(nodes, l)
		} else {
			shards = append(shards, l)
			coherence += coh
		}
	}
	order := mapOrder(m)
	byMap := func(a, b Load) int {
		ia, oka := order[a.Name]
		ib, okb := order[b.Name]
		switch {
		case oka && okb:
			return cmp.Compare(ia, ib)
		case oka != okb:
			if oka {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.Name, b.Name)
	}
	slices.SortStableFunc(nodes, byMap)
	slices.SortStableFunc(shards, byMap)
	return nodes, shards, coherence
}

// delta is after - before, or after when the counter restarted.
func delta(after, before uint64) uint64 {
	if after < before {
		return after
	}
	return after - before
}

// mapOrder numbers the members and shards of m in the map's order.
func mapOrder(m *partmap.Map) map[string]int {
	order := map[string]int{}
	if m == nil {
		return order
	}
	for _, l := range m.Layers {
		for _, mb := range l.Members {
			order[mb.Name] = len(order)
		}
	}
	for _, r := range m.Storage.Racks {
		for _, s := range r.Shards {
			order[s.Name] = len(order)
		}
	}
	return order
}

// busiest returns the highest utilisation among the loads with a capacity
// and whose it is ("" and 0 when none has a capacity).
func busiest(loads ...[]Load) (name string, u float64) {
	for _, ls := range loads {
		for _, l := range ls {
			if l.Capacity > 0 && l.Utilization > u {
				name, u = l.Name, l.Utilization
			}
		}
	}
	return name, u
}

// imbalance is max/mean of the loads' units per second (0 if they did no
// work).
func imbalance(ls []Load) float64 {
	var sum, top float64
	for _, l := range ls {
		sum += l.UnitsPerSecond
		top = max(top, l.UnitsPerSecond)
	}
	if sum == 0 {
		return 0
	}
	return top / (sum / float64(len(ls)))
}

// capacities returns the summed and the largest shard capacity in ws, and
// whether any member has an emulated capacity.
func capacities(ws []Work) (shardSum, shardMax float64, emulated bool) {
	for _, w := range ws {
		if w.Capacity > 0 {
			emulated = true
		}
		if !w.Node {
			shardSum += w.Capacity
			shardMax = max(shardMax, w.Capacity)
		}
	}
	return shardSum, shardMax, emulated
}
