package capacity

import (
	"sync"
	"time"
)

// UtilizationMeter tells how busy a Limiter is: the units it handed out
// over a sample period as a fraction of what its rate allows in that time.
// A server whose requests queue for its emulated capacity uses all of it
// (about 1), one that is merely slow to answer — its datagrams delayed on
// the way, say — uses little. A health check reports it, so that a
// controller can tell a gray failure from a busy survivor (the standalone
// control loop's PING prober). It is not on the request path: it reads the
// Limiter's counter when asked.
type UtilizationMeter struct {
	l      *Limiter
	period time.Duration
	clk    clock

	mu    sync.Mutex // guards the sample below
	at    time.Time  // start of the sample in progress
	used  uint64     // l.Used() at at
	last  float64    // utilization over the last complete sample
	known bool       // a sample has completed
}

// NewUtilizationMeter measures l over samples of at least period.
func NewUtilizationMeter(l *Limiter, period time.Duration) *UtilizationMeter {
	return newUtilizationMeter(l, period, wallClock{})
}

func newUtilizationMeter(l *Limiter, period time.Duration, clk clock) *UtilizationMeter {
	return &UtilizationMeter{l: l, period: period, clk: clk, at: clk.now(), used: l.Used()}
}

// Utilization returns the fraction of the capacity used over the last
// complete sample: the units taken between two calls at least a period
// apart (the sample ends at the call that completes it), divided by what
// the rate allows in that time. It can exceed 1 by the Limiter's burst. ok
// is false for an unlimited Limiter, which has no capacity to be a
// fraction of, and until a sample has completed.
func (m *UtilizationMeter) Utilization() (u float64, ok bool) {
	if !m.l.Limited() {
		return 0, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clk.now()
	if d := now.Sub(m.at); d >= m.period {
		used := m.l.Used()
		m.last = float64(used-m.used) / (m.l.Rate() * d.Seconds())
		m.known = true
		m.at, m.used = now, used
	}
	return m.last, m.known
}
