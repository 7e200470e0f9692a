package layout

import (
	"time"

	"github.com/distcache/distcache/layersizing"
)

// DefaultSizingInterval is the default of spec.cacheBudget.interval.
const DefaultSizingInterval = 30 * time.Second

// SizingPolicy is how a cluster splits its cache budget among its layers
// (spec.cacheBudget, package layersizing): the operator and standalone
// mode's control loop both run it.
type SizingPolicy struct {
	// Interval is the period of the split.
	Interval time.Duration
	// Plan is the budget and the layers it sizes.
	Plan layersizing.Config
}

// Sizing is the cluster's policy for its cache budget; ok is false
// without a budget or without a software layer of capacity.auto.
func (c *Cluster) Sizing() (p SizingPolicy, ok bool) {
	b := c.Spec.CacheBudget
	if b == nil {
		return SizingPolicy{}, false
	}
	p = SizingPolicy{
		Interval: DefaultSizingInterval,
		Plan:     layersizing.Config{Budget: int(b.Entries), Start: map[string]int{}, Hysteresis: float64(b.HysteresisPercent) / 100},
	}
	if b.Interval != nil && b.Interval.Duration > 0 {
		p.Interval = b.Interval.Duration
	}
	for _, l := range c.SoftwareLayers() {
		if l.Spec.Capacity.Auto {
			p.Plan.Layers = append(p.Plan.Layers, l.Name)
			p.Plan.Start[l.Name] = int(l.Spec.Capacity.Entries)
		}
	}
	return p, len(p.Plan.Layers) > 0
}
