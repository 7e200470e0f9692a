package routing

import "fmt"

// Zones.
//
// Reads that cross zones cost money and latency in most clouds. A key's
// candidates sit in distinct zones where the partition map can place them
// so (package partmap, failure domains), so a sender usually has one
// candidate in its own zone. A table made WithRemoteMargin has Choose
// prefer that one: a candidate marked Remote (in another zone than the
// sender) competes with its normalised load multiplied by 1 + margin, and
// a tie between a local and a remote candidate goes to the local one. So
// while loads are low, or even, every read stays in the sender's zone; a
// read crosses zones only once the local candidate is loaded more than
// 1 + margin times the remote one, which keeps the balance of
// power-of-two-choices within that factor.

// WithRemoteMargin makes Router.Choose prefer candidates not marked Remote
// by margin (≥ 0): a remote candidate's load counts 1 + margin times.
func WithRemoteMargin(margin float64) TableOption {
	return func(t *LoadTable) error {
		if !(margin >= 0) || margin > 1e6 {
			return fmt.Errorf("%w: remote margin must be in [0, 1e6], got %v", ErrInvalidConfig, margin)
		}
		t.remoteFactor = 1 + margin
		return nil
	}
}
