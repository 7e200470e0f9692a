package cachecluster

import (
	"testing"
	"time"

	"github.com/distcache/distcache/failover"
)

// TestReadinessClockRefines feeds the clock a member's observations as the
// API gives them (times truncated to the second) and checks the start of
// each readiness episode it returns.
func TestReadinessClockRefines(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 5, 0, 0, 0, time.UTC) // a truncated API time
	obs := func(ready bool, since time.Time) failover.Observation {
		return failover.Observation{Ready: ready, Since: since}
	}
	var c readinessClock
	steps := []struct {
		name string
		o    failover.Observation
		now  time.Time
		want time.Time
	}{
		{"not Ready, seen 300 ms into the API's second", obs(false, t0), t0.Add(300 * time.Millisecond), t0.Add(300 * time.Millisecond)},
		{"the same episode, read back truncated", obs(false, t0), t0.Add(900 * time.Millisecond), t0.Add(300 * time.Millisecond)},
		{"Ready again, seen as it happens", obs(true, t0.Add(2*time.Second)), t0.Add(2*time.Second + 40*time.Millisecond), t0.Add(2*time.Second + 40*time.Millisecond)},
		{"not Ready, first seen 5 s late", obs(false, t0.Add(3*time.Second)), t0.Add(8 * time.Second), t0.Add(3 * time.Second)},
		{"that episode again", obs(false, t0.Add(3*time.Second)), t0.Add(9 * time.Second), t0.Add(3 * time.Second)},
		{"a Since in the future", obs(true, t0.Add(20*time.Second)), t0.Add(10 * time.Second), t0.Add(20 * time.Second)},
	}
	for _, s := range steps {
		if got := c.refine("ns/c/m", s.o, s.now).Since; !got.Equal(s.want) {
			t.Fatalf("%s: since %v, want %v", s.name, got.Sub(t0), s.want.Sub(t0))
		}
	}
	c.forget("ns/c")
	if got := c.refine("ns/c/m", obs(false, t0), t0.Add(900*time.Millisecond)).Since; !got.Equal(t0.Add(900 * time.Millisecond)) {
		t.Fatalf("after forget: since %v, want a new episode seen at 900ms", got.Sub(t0))
	}
}
