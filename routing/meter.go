package routing

import (
	"fmt"
	"math"
	"sync/atomic"
)

// LoadMeter measures the load a cache node stamps into its replies: an
// exponentially decayed event rate with time constant Window. An event of
// weight n at time t contributes n·e^{-(now-t)/Window} / Window to Rate(now),
// so for a constant arrival rate λ the estimate converges to λ (to within
// e^{-k} after k windows). It is safe for concurrent use.
//
// Implementation: instead of a (value, last-update) pair, which would need a
// lock to update consistently, the meter keeps a single float64 accumulator
// relative to a fixed reference time epoch:
//
//	acc = Σ n_i · e^{(t_i - epoch)/Window}
//	Rate(now) = acc · e^{-(now - epoch)/Window} / Window
//
// so Add is one CAS loop on one word. To keep e^{(t-epoch)/Window} finite, the
// state is rebased (epoch moved forward, acc scaled down) once now is more
// than rebaseWindows windows past epoch. Rebasing replaces the state object:
// the old accumulator is sealed (sign bit set; acc is never negative
// otherwise) so that no Add can land in it afterwards, and any goroutine that
// finds a sealed or overdue state helps finish the rebase instead of waiting,
// so Add is lock-free. Rebasing allocates one small object every
// rebaseWindows windows.
type LoadMeter struct {
	window    int64
	invWindow float64 // 1/window
	state     atomic.Pointer[meterState]
	// rebaseAfter is rebaseWindows, a field so tests can force rebases.
	rebaseAfter float64
}

// rebaseWindows: e^64 ≈ 6e27, far from float64 overflow even multiplied by
// the largest uint64 weight, and rebases are rare (every 64 windows).
const rebaseWindows = 64

const (
	sealBit       = uint64(1) << 63
	noNext  int64 = math.MinInt64
)

type meterState struct {
	epoch int64
	acc   atomic.Uint64 // float64 bits; sealBit set once the state is retired
	// next is the epoch of the successor state, proposed by the first
	// goroutine that starts a rebase (noNext until then). Every helper
	// builds the successor from (acc, epoch, next), so all agree.
	next atomic.Int64
}

func newMeterState(epoch int64, acc float64) *meterState {
	s := &meterState{epoch: epoch}
	s.acc.Store(math.Float64bits(acc))
	s.next.Store(noNext)
	return s
}

// NewLoadMeter returns a meter with time constant window (ns, > 0).
func NewLoadMeter(window int64) (*LoadMeter, error) {
	if window <= 0 {
		return nil, fmt.Errorf("cannot create load meter: %w: window must be > 0 ns, got %d", ErrInvalidConfig, window)
	}
	m := &LoadMeter{
		window:      window,
		invWindow:   1 / float64(window),
		rebaseAfter: rebaseWindows,
	}
	m.state.Store(newMeterState(0, 0))
	return m, nil
}

// Window returns the meter's time constant in ns.
func (m *LoadMeter) Window() int64 { return m.window }

// Add records n events at time now. It is lock-free and does not allocate
// except when it rebases (see LoadMeter). Callers should pass a
// non-decreasing now (small reordering between goroutines is harmless).
func (m *LoadMeter) Add(n uint64, now int64) {
	if n == 0 {
		return
	}
	w := float64(n)
	for {
		s := m.state.Load()
		x := float64(now-s.epoch) * m.invWindow
		if x > m.rebaseAfter {
			m.rebase(s, now)
			continue
		}
		// The increment depends only on s.epoch, so compute it once per
		// state and keep the CAS window down to a load and an add.
		inc := w * math.Exp(x)
		for {
			bits := s.acc.Load()
			if bits&sealBit != 0 {
				m.rebase(s, now)
				break
			}
			v := math.Float64frombits(bits) + inc
			if s.acc.CompareAndSwap(bits, math.Float64bits(v)) {
				return
			}
		}
	}
}

// rebase retires s and installs its successor (or helps whoever is doing so).
func (m *LoadMeter) rebase(s *meterState, now int64) {
	s.next.CompareAndSwap(noNext, now)
	next := s.next.Load()
	var bits uint64
	for {
		bits = s.acc.Load()
		if bits&sealBit != 0 || s.acc.CompareAndSwap(bits, bits|sealBit) {
			break
		}
	}
	if m.state.Load() != s {
		return // someone already installed the successor
	}
	v := math.Float64frombits(bits &^ sealBit)
	ns := newMeterState(next, v*math.Exp(float64(s.epoch-next)*m.invWindow))
	m.state.CompareAndSwap(s, ns) // losers' ns is garbage
}

// Rate returns the decayed event rate at now, in events per second.
func (m *LoadMeter) Rate(now int64) float64 {
	s := m.state.Load()
	// A sealed accumulator holds the final value for s's epoch, so
	// (acc, epoch) is always a consistent pair.
	v := math.Float64frombits(s.acc.Load() &^ sealBit)
	if v == 0 {
		return 0
	}
	x := float64(now-s.epoch) * m.invWindow
	if x < 0 {
		x = 0 // now before the epoch: report the value at the epoch
	}
	return v * math.Exp(-x) * m.invWindow * 1e9
}
