package capacity

import (
	"math"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock that only moves when a test advances it or a
// Limiter sleeps on it: a sleep of d moves it by exactly d and returns.
type fakeClock struct {
	mu     sync.Mutex // guards the fields below
	t      time.Time
	slept  time.Duration
	sleeps int
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Unix(1_000_000, 0)} }

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) sleep(d time.Duration, _ <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	c.slept += d
	c.sleeps++
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func (c *fakeClock) sleepStats() (time.Duration, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.slept, c.sleeps
}

// queuedLimiter is a Limiter of rate on clk whose bucket is full (idle) or
// empty with queued units promised to earlier callers.
func queuedLimiter(rate float64, clk *fakeClock, idle bool, queued int) *Limiter {
	l := newLimiter(rate, clk)
	if l.lim != nil && !idle {
		l.lim.ReserveN(clk.now(), l.burst) // empty the bucket
		for range queued {
			l.lim.ReserveN(clk.now(), 1)
		}
	}
	return l
}

func TestBurst(t *testing.T) {
	tests := []struct {
		rate float64
		want int
	}{
		{0.5, 1}, {1, 1}, {100, 1}, {101, 2}, {150, 2}, {1000, 10}, {12345, 124}, {1e6, 10000},
		{math.NaN(), 1}, {1e300, math.MaxInt32},
	}
	for _, tt := range tests {
		if got := Burst(tt.rate); got != tt.want {
			t.Errorf("Burst(%v) = %d, want %d", tt.rate, got, tt.want)
		}
	}
}

func TestTakeCounts(t *testing.T) {
	takes := []int{1, 3, 0, -2, 5, 1}
	const want = 10
	tests := []struct {
		name     string
		rate     float64
		wantRate float64
		limited  bool
	}{
		{"unlimited zero", 0, 0, false},
		{"unlimited negative", -5, 0, false},
		{"unlimited NaN", math.NaN(), 0, false},
		{"unlimited infinite", math.Inf(1), 0, false},
		{"limited", 100, 100, true},
		{"limited fractional", 0.25, 0.25, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newFakeClock()
			l := newLimiter(tt.rate, clk)
			for _, n := range takes {
				l.Take(n)
			}
			if got := l.Used(); got != want {
				t.Errorf("Used() = %d, want %d", got, want)
			}
			if got := l.Rate(); got != tt.wantRate {
				t.Errorf("Rate() = %v, want %v", got, tt.wantRate)
			}
			if got := l.Limited(); got != tt.limited {
				t.Errorf("Limited() = %v, want %v", got, tt.limited)
			}
			if _, sleeps := clk.sleepStats(); !tt.limited && sleeps != 0 {
				t.Errorf("an unlimited limiter slept %d times", sleeps)
			}
		})
	}
}

func TestUnlimitedNeverBlocks(t *testing.T) {
	clk := newFakeClock()
	l := newLimiter(0, clk)
	for range 1000 {
		l.Take(1 << 20)
	}
	if slept, sleeps := clk.sleepStats(); sleeps != 0 || slept != 0 {
		t.Fatalf("unlimited limiter slept %d times (%v)", sleeps, slept)
	}
	if got, want := l.Used(), uint64(1000<<20); got != want {
		t.Fatalf("Used() = %d, want %d", got, want)
	}
	// The wall-clock limiter: a huge Take returns (it would block for
	// ages at any finite rate).
	New(0).Take(math.MaxInt32)
}

func TestNilLimiter(t *testing.T) {
	var l *Limiter
	l.Take(5)
	l.Close()
	if l.Used() != 0 || l.Rate() != 0 || l.Limited() {
		t.Fatalf("nil limiter: Used %d Rate %v Limited %v, want 0, 0, false", l.Used(), l.Rate(), l.Limited())
	}
	var zero Limiter
	zero.Take(3)
	zero.Close()
	if zero.Used() != 3 || zero.Limited() {
		t.Fatalf("zero limiter: Used %d Limited %v, want 3 and unlimited", zero.Used(), zero.Limited())
	}
}

// step is one Take after the clock moved by idle.
type step struct {
	idle time.Duration
	n    int
}

// observation is the limiter's state when a Take returned.
type observation struct {
	at   time.Time
	used uint64
}

// TestAdmissionBound runs patterns of Takes on a fake clock and checks, over
// every interval between two returns of Take, that the limiter admitted at
// most burst + rate·elapsed units; and that when it is saturated from the
// start it waits no longer than the token bucket requires: the units beyond
// the first burst take exactly (used − burst)/rate.
func TestAdmissionBound(t *testing.T) {
	repeat := func(s step, k int) []step {
		out := make([]step, k)
		for i := range out {
			out[i] = s
		}
		return out
	}
	tests := []struct {
		name      string
		rate      float64
		steps     []step
		saturated bool // no idle time: check the total wait exactly
		noWait    bool // a load within the rate: no Take waits
	}{
		{name: "single units, burst 1", rate: 100, steps: repeat(step{0, 1}, 500), saturated: true},
		{name: "single units, burst 10", rate: 1000, steps: repeat(step{0, 1}, 500), saturated: true},
		{name: "takes larger than the burst", rate: 100, steps: repeat(step{0, 3}, 100), saturated: true},
		{name: "mixed sizes", rate: 2500, steps: []step{{0, 1}, {0, 40}, {0, 2}, {0, 25}, {0, 1}, {0, 100}, {0, 7}}, saturated: true},
		{name: "idle refills at most a burst", rate: 1000, steps: append(repeat(step{0, 1}, 50),
			step{time.Hour, 30}, step{0, 1}, step{time.Millisecond, 1}, step{5 * time.Millisecond, 12})},
		{name: "a trickle at the rate never waits", rate: 100, steps: repeat(step{10 * time.Millisecond, 1}, 50), noWait: true},
		{name: "bursts after pauses", rate: 500, steps: []step{{time.Second, 5}, {0, 5}, {3 * time.Millisecond, 2},
			{time.Second, 20}, {0, 1}, {0, 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newFakeClock()
			l := newLimiter(tt.rate, clk)
			burst := float64(Burst(tt.rate))
			obs := []observation{{at: clk.now()}}
			for _, s := range tt.steps {
				clk.advance(s.idle)
				l.Take(s.n)
				obs = append(obs, observation{at: clk.now(), used: l.Used()})
			}
			// Durations are rounded to the nanosecond by the token
			// bucket: allow that rounding per Take, nothing more.
			slack := tt.rate * float64(len(tt.steps)) * 1e-9
			for i := range obs {
				for j := i + 1; j < len(obs); j++ {
					admitted := float64(obs[j].used - obs[i].used)
					elapsed := obs[j].at.Sub(obs[i].at).Seconds()
					if bound := burst + tt.rate*elapsed + slack; admitted > bound {
						t.Fatalf("%v units admitted in %v, over burst %v + rate %v × elapsed = %v",
							admitted, obs[j].at.Sub(obs[i].at), burst, tt.rate, bound)
					}
				}
			}
			slept, sleeps := clk.sleepStats()
			if tt.noWait && sleeps != 0 {
				t.Errorf("a load within the rate waited %d times (%v)", sleeps, slept)
			}
			if tt.saturated {
				used := float64(l.Used())
				want := time.Duration(math.Max(0, (used-burst)/tt.rate) * float64(time.Second))
				if d := slept - want; d < -time.Microsecond || d > time.Microsecond {
					t.Errorf("waited %v for %v units, want (used − burst)/rate = %v", slept, used, want)
				}
			}
		})
	}
}

func TestCloseEndsWaits(t *testing.T) {
	// One unit per hour: the second Take would block for ages.
	l := New(1.0 / 3600)
	l.Take(1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Take(1000)
	}()
	l.Close()
	l.Close() // idempotent
	select {
	case <-done:
	case <-time.After(30 * time.Second): // a guard against a hang, not a measurement
		t.Fatal("Take still blocked after Close")
	}
	l.Take(1) // after Close: returns at once
	if got := l.Used(); got != 1002 {
		t.Fatalf("Used() = %d, want 1002: units are counted after Close too", got)
	}
}

func TestConcurrentTake(t *testing.T) {
	tests := []struct {
		name string
		rate float64
	}{
		{"unlimited", 0},
		{"limited", 1e7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := New(tt.rate)
			const goroutines, takes = 8, 1000
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					for i := range takes {
						l.Take(1 + (g+i)%3)
					}
				})
			}
			wg.Wait()
			var want uint64
			for g := range goroutines {
				for i := range takes {
					want += uint64(1 + (g+i)%3)
				}
			}
			if got := l.Used(); got != want {
				t.Fatalf("Used() = %d, want %d", got, want)
			}
		})
	}
}

func BenchmarkTake(b *testing.B) {
	for _, bc := range []struct {
		name string
		rate float64
	}{{"unlimited", 0}, {"unsaturated", 1e12}} {
		b.Run(bc.name, func(b *testing.B) {
			l := New(bc.rate)
			b.ReportAllocs()
			for b.Loop() {
				l.Take(1)
			}
		})
	}
}

func TestTakeBy(t *testing.T) {
	tests := []struct {
		name      string
		rate      float64
		idle      bool          // the bucket is full (else empty)
		queued    int           // units promised to earlier callers
		n         int           // units asked for
		within    time.Duration // deadline after now
		want      bool
		wantSlept time.Duration
	}{
		{name: "idle: within the burst at once", rate: 100, idle: true, n: 1, within: 0, want: true},
		{name: "queue clears before the deadline", rate: 100, queued: 10, n: 1, within: time.Second,
			want: true, wantSlept: 110 * time.Millisecond},
		{name: "queue too long: shed", rate: 100, queued: 10, n: 1, within: 50 * time.Millisecond},
		{name: "more than a burst", rate: 100, n: 3, within: time.Second, want: true, wantSlept: 30 * time.Millisecond},
		{name: "unlimited", rate: 0, queued: 1000, n: 5, within: 0, want: true},
		{name: "nothing asked", rate: 100, queued: 1000, n: 0, within: 0, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newFakeClock()
			l := queuedLimiter(tt.rate, clk, tt.idle, tt.queued)
			before := l.Used()
			got := l.TakeBy(tt.n, clk.now().Add(tt.within))
			slept, _ := clk.sleepStats()
			if got != tt.want {
				t.Fatalf("TakeBy = %v, want %v", got, tt.want)
			}
			if tt.rate > 0 && tt.queued > 0 && !got {
				// The shed request left the queue as it was: the next
				// unit comes right after the queued ones.
				if ok := l.TakeBy(1, clk.now().Add(time.Duration(tt.queued+1)*10*time.Millisecond)); !ok || l.Used() != 1 {
					t.Errorf("after shedding, a caller willing to wait for the queue was refused")
				}
				return
			}
			wantUsed := uint64(max(tt.n, 0))
			if l.Used()-before != wantUsed || slept != tt.wantSlept {
				t.Errorf("used %d units after sleeping %v, want %d after %v", l.Used()-before, slept, wantUsed, tt.wantSlept)
			}
		})
	}
}

// TestTakeByUnsaturatedDoesNotAllocate checks the shim's read path under an
// emulated capacity with room to spare: no allocation per request.
func TestTakeByUnsaturatedDoesNotAllocate(t *testing.T) {
	l := New(1e12)
	deadline := time.Now().Add(time.Hour)
	if allocs := testing.AllocsPerRun(100, func() {
		if !l.TakeBy(1, deadline) {
			t.Fatal("TakeBy refused a unit of an idle limiter")
		}
	}); allocs != 0 {
		t.Fatalf("TakeBy allocates %v times per call, want 0", allocs)
	}
}

func TestTryTake(t *testing.T) {
	tests := []struct {
		name   string
		rate   float64
		idle   bool // the bucket is full (else empty)
		closed bool
		n      int
		want   bool
	}{
		{name: "idle: within the burst", rate: 100, idle: true, n: 1, want: true},
		{name: "busy: refused without waiting", rate: 100, n: 1},
		{name: "idle but more than a burst", rate: 100, idle: true, n: 2},
		{name: "unlimited", rate: 0, n: 5, want: true},
		{name: "closed", rate: 100, closed: true, n: 1, want: true},
		{name: "nothing asked", rate: 100, n: 0, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newFakeClock()
			l := queuedLimiter(tt.rate, clk, tt.idle, 0)
			if tt.closed {
				l.Close()
			}
			got := l.TryTake(tt.n)
			slept, sleeps := clk.sleepStats()
			if got != tt.want || sleeps != 0 {
				t.Fatalf("TryTake(%d) = %v after %d sleeps (%v), want %v without sleeping", tt.n, got, sleeps, slept, tt.want)
			}
			wantUsed := uint64(0)
			if got {
				wantUsed = uint64(max(tt.n, 0))
			}
			if l.Used() != wantUsed {
				t.Errorf("used %d units, want %d", l.Used(), wantUsed)
			}
		})
	}
}

// TestTakeAhead checks the queue of higher priority: TakeAhead does not wait
// for the units promised to Take's callers, waits for those of earlier
// TakeAhead calls, and the units it takes delay the callers after it.
func TestTakeAhead(t *testing.T) {
	tests := []struct {
		name      string
		queued    int           // units promised to Take's callers (rate 100: 10 ms each)
		ahead     []int         // successive TakeAhead calls
		wantSlept time.Duration // by the TakeAhead calls together
		wantDone  time.Duration // when a unit Taken after them is there
	}{
		{name: "ahead of a queue of reads", queued: 10, ahead: []int{1}, wantSlept: 0, wantDone: 120 * time.Millisecond},
		{name: "behind an earlier write", ahead: []int{1, 1}, wantSlept: 10 * time.Millisecond, wantDone: 30 * time.Millisecond},
		{name: "more than a burst", ahead: []int{3, 1}, wantSlept: 30 * time.Millisecond, wantDone: 50 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newFakeClock()
			l := queuedLimiter(100, clk, false, tt.queued)
			want := 0
			for _, n := range tt.ahead {
				l.TakeAhead(n)
				want += n
			}
			slept, _ := clk.sleepStats()
			if slept != tt.wantSlept || l.Used() != uint64(want) {
				t.Fatalf("TakeAhead slept %v and used %d units, want %v and %d", slept, l.Used(), tt.wantSlept, want)
			}
			// The units TakeAhead took are owed: a caller after them waits
			// for the queue, for them and for its own unit.
			l.Take(1)
			if done, _ := clk.sleepStats(); done != tt.wantDone {
				t.Errorf("a unit taken after them was there after %v, want %v", done, tt.wantDone)
			}
		})
	}
}

func TestTakeAheadUnlimitedOrClosed(t *testing.T) {
	for _, l := range []*Limiter{newLimiter(0, newFakeClock()), closedLimiter()} {
		l.TakeAhead(5)
		l.TakeAhead(5)
		if l.Used() != 10 {
			t.Errorf("used %d units, want 10", l.Used())
		}
	}
	var nilLimiter *Limiter
	nilLimiter.TakeAhead(1) // does not panic
}

func closedLimiter() *Limiter {
	l := newLimiter(100, newFakeClock())
	l.Close()
	return l
}
