package routing

import (
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
)

func mustMeter(t testing.TB, window int64) *LoadMeter {
	t.Helper()
	m, err := NewLoadMeter(window)
	if err != nil {
		t.Fatalf("NewLoadMeter(%d): %v", window, err)
	}
	return m
}

func TestNewLoadMeterConfig(t *testing.T) {
	for _, w := range []int64{0, -1, math.MinInt64} {
		m, err := NewLoadMeter(w)
		if err == nil || m != nil {
			t.Errorf("NewLoadMeter(%d) = (%v, %v), want an error", w, m, err)
			continue
		}
		if !errors.Is(err, ErrInvalidConfig) || !strings.HasPrefix(err.Error(), "cannot create load meter: ") {
			t.Errorf("NewLoadMeter(%d) error %q: want \"cannot create load meter: \" wrapping ErrInvalidConfig", w, err)
		}
	}
	if m := mustMeter(t, 5); m.Window() != 5 {
		t.Errorf("Window() = %d, want 5", m.Window())
	}
}

// TestLoadMeterConverges feeds a constant arrival rate in virtual time and
// checks the estimate after 10 windows, then checks the decay after traffic
// stops.
func TestLoadMeterConverges(t *testing.T) {
	tests := []struct {
		name   string
		window int64   // ns
		rate   float64 // events per second
		batch  uint64  // events per Add
		start  int64   // virtual start time
	}{
		{"1k qps, 1 s window", 1e9, 1e3, 1, 0},
		{"1M qps, 1 ms window", 1e6, 1e6, 1, 0},
		{"1M qps in batches of 10", 1e6, 1e6, 10, 0},
		{"50k qps, 100 ms window, wall-clock epoch", 1e8, 5e4, 1, 1_700_000_000_000_000_000},
		{"10M qps, 10 us window", 1e4, 1e7, 1, 12345},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := mustMeter(t, tc.window)
			if got := m.Rate(tc.start); got != 0 {
				t.Fatalf("fresh meter: Rate = %v, want 0", got)
			}
			interval := float64(tc.batch) / tc.rate * 1e9 // ns between Adds
			end := tc.start + 10*tc.window
			var now int64
			for i := 0; ; i++ {
				now = tc.start + int64(math.Round(float64(i)*interval))
				if now > end {
					break
				}
				m.Add(tc.batch, now)
			}
			got := m.Rate(end)
			t.Logf("rate after 10 windows: %.6g (want %.6g)", got, tc.rate)
			if e := relErr(got, tc.rate); e > 0.01 {
				t.Errorf("Rate = %v, want %v within 1%% (rel err %.4f)", got, tc.rate, e)
			}
			// Keep going for 200 more windows (several rebases): still within 1%.
			end2 := end + 200*tc.window
			for i := 1; ; i++ {
				now = end + int64(math.Round(float64(i)*interval))
				if now > end2 {
					break
				}
				m.Add(tc.batch, now)
			}
			steady := m.Rate(end2)
			if e := relErr(steady, tc.rate); e > 0.01 {
				t.Errorf("after 210 windows: Rate = %v, want %v within 1%%", steady, tc.rate)
			}
			// Traffic stops: exponential decay with time constant window.
			for _, k := range []int64{1, 3, 10} {
				want := steady * math.Exp(-float64(k))
				if got := m.Rate(end2 + k*tc.window); relErr(got, want) > 1e-9 {
					t.Errorf("%d windows after stop: Rate = %v, want %v", k, got, want)
				}
			}
			if got := m.Rate(end2 + 1000*tc.window); got != 0 {
				t.Errorf("1000 windows after stop: Rate = %v, want 0", got)
			}
			// Traffic resumes after a long pause: converges again.
			resume := end2 + 1000*tc.window
			for i := 0; ; i++ {
				now = resume + int64(math.Round(float64(i)*interval))
				if now > resume+10*tc.window {
					break
				}
				m.Add(tc.batch, now)
			}
			if got := m.Rate(resume + 10*tc.window); relErr(got, tc.rate) > 0.01 {
				t.Errorf("after resuming: Rate = %v, want %v within 1%%", got, tc.rate)
			}
		})
	}
}

func TestLoadMeterExactSum(t *testing.T) {
	// Three events, checked against the closed form Σ n·e^{-(now-t)/W}/W.
	const w = int64(1000)
	m := mustMeter(t, w)
	m.Add(2, 100)
	m.Add(0, 200) // no-op
	m.Add(3, 600)
	m.Add(1, 1500)
	for _, now := range []int64{1500, 2000, 9000} {
		want := 0.0
		for _, ev := range []struct {
			n float64
			t int64
		}{{2, 100}, {3, 600}, {1, 1500}} {
			want += ev.n * math.Exp(-float64(now-ev.t)/float64(w))
		}
		want = want / float64(w) * 1e9
		if got := m.Rate(now); relErr(got, want) > 1e-12 {
			t.Errorf("Rate(%d) = %v, want %v", now, got, want)
		}
	}
}

func TestLoadMeterAddDoesNotAllocate(t *testing.T) {
	m := mustMeter(t, 1e6)
	now := int64(0)
	m.Add(1, now)
	allocs := testing.AllocsPerRun(1000, func() {
		now += 100 // 1000 runs = 0.1 window: no rebase
		m.Add(1, now)
		_ = m.Rate(now)
	})
	if allocs != 0 {
		t.Errorf("Add/Rate allocate %v times per run, want 0", allocs)
	}
}

// TestLoadMeterConcurrent adds from several goroutines while forcing a rebase
// on nearly every Add (rebaseAfter = 0) so the sealing and helping paths run
// concurrently. The window is so long that decay is negligible: no event may
// be lost or double-counted.
func TestLoadMeterConcurrent(t *testing.T) {
	for _, rebaseAfter := range []float64{0, rebaseWindows} {
		const (
			window     = int64(1e15)
			goroutines = 4
			iters      = 3000
		)
		m := mustMeter(t, window)
		m.rebaseAfter = rebaseAfter
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range iters {
					now := int64(i*goroutines + g)
					m.Add(uint64(g+1), now)
					if i%64 == 0 {
						if r := m.Rate(now); !(r >= 0) || math.IsInf(r, 0) {
							t.Errorf("Rate = %v during concurrent Add", r)
							return
						}
					}
				}
			}()
		}
		wg.Wait()
		want := 0.0
		for g := range goroutines {
			want += float64(g+1) * iters
		}
		end := int64(iters * goroutines)
		got := m.Rate(end) * float64(window) / 1e9
		if relErr(got, want) > 1e-9 {
			t.Errorf("rebaseAfter=%v: recovered %v events, want %v", rebaseAfter, got, want)
		}
	}
}
