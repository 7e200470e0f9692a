package redundancy

import (
	"math"

	"github.com/distcache/distcache/placement/copies"
)

// keepUnlessBetter is d, or the copies the keys have now when d only
// takes copies below one per layer (or moves a key's copies among its
// owners) and serves the reported load no better than them by more than
// the model's hysteresis.
//
// Decide takes its decision at the largest rate factor the placement
// allows, where the busiest server is exactly at capacity: there a key on
// that server gets fewer copies than layers to spare the server their
// coherence work. Which server is the busiest moves with the noise of the
// reports, and the keys on it with it, so a steady workload would get a
// new map version at every decision for a gain of a few percent of its
// rate. A key given back its copy per layer, a change between cached and
// not, or beyond one copy per layer (Theorem 1's precondition, with its
// own hysteresis in Decide) is always published.
func keepUnlessBetter(m copies.Model, keys []copies.Key, base []float64, nodes *mapNodes, now [][]int, d copies.Decision) (copies.Decision, error) {
	for i := range keys {
		if !fewerWithinLayers(len(now[i]), len(d.Holders[i]), nodes.layers()) {
			return d, nil // a change beyond rate tuning
		}
	}
	rate, err := copies.Rate(m, keys, base, nodes, now)
	if err != nil {
		return d, err
	}
	if m.MaxRate > 0 {
		rate = math.Min(rate, m.MaxRate)
	}
	if d.Rate > rate*(1+m.Hysteresis) {
		return d, nil
	}
	return copies.Decision{Holders: now, Rate: rate}, nil
}

// fewerWithinLayers reports whether a key going from a to b copies keeps
// its count or loses copies while holding between one and one per layer.
func fewerWithinLayers(a, b, layers int) bool {
	return a == b || (b >= 1 && b < a && a <= layers)
}
