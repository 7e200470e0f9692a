package layout

import (
	"time"

	"github.com/distcache/distcache/redundancy"
)

// Defaults of spec.hotKeys.replication.
const (
	DefaultCopiesInterval = 5 * time.Second
	// DefaultNodeCapacity and DefaultStorageCapacity are about what one
	// cache node and one shim with its redis-server serve on a core of a
	// small machine (docs/benchmarks.md).
	DefaultNodeCapacity    = 200_000
	DefaultStorageCapacity = 20_000
)

// CopiesPolicy is how a cluster decides the copies of its hot keys
// (spec.hotKeys.replication, package redundancy): the operator and
// standalone mode's control loop both run it.
type CopiesPolicy struct {
	// Interval is the period of the decision.
	Interval time.Duration
	// Plan is the cost model and its bounds.
	Plan redundancy.Config
}

// Copies is the cluster's policy for the copies of hot keys; ok is false
// when the spec does not enable the decision. The capacities the spec
// leaves unset are node and storage when positive (standalone mode's
// emulated capacities), else the defaults; a node's slots are the entries
// of the smallest cache of a layer.
func (c *Cluster) Copies(node, storage float64) (p CopiesPolicy, ok bool) {
	r := c.Spec.HotKeys.Replication
	if r == nil || !r.Enabled {
		return CopiesPolicy{}, false
	}
	p = CopiesPolicy{
		Interval: DefaultCopiesInterval,
		Plan: redundancy.Config{
			NodeCapacity:   capacity(r.NodeCapacity, node, DefaultNodeCapacity),
			ServerCapacity: capacity(r.StorageCapacity, storage, DefaultStorageCapacity),
			MaxCopies:      int(r.MaxCopies),
			MinRate:        float64(r.MinRate),
			CoherenceCost:  float64(r.CoherenceCostPercent) / 100,
			Hysteresis:     float64(r.HysteresisPercent) / 100,
		},
	}
	if r.Interval != nil && r.Interval.Duration > 0 {
		p.Interval = r.Interval.Duration
	}
	if r.HeadroomPercent != nil {
		p.Plan.Headroom = 1 + float64(*r.HeadroomPercent)/100
	}
	for _, l := range c.SoftwareLayers() {
		if e := int(l.Spec.Capacity.Entries); e > 0 && (p.Plan.Slots == 0 || e < p.Plan.Slots) {
			p.Plan.Slots = e
		}
	}
	return p, true
}

// capacity is spec when set, else fallback when positive, else def.
func capacity(spec int64, fallback, def float64) float64 {
	switch {
	case spec > 0:
		return float64(spec)
	case fallback > 0:
		return fallback
	}
	return def
}
