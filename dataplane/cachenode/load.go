package cachenode

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// The load a node stamps into its replies (DistCache §4.2: the telemetry
// that power-of-two-choices routes by) is the meter's decayed GET rate,
// in GETs per LoadWindow. Adding each GET to the meter and reading it back
// costs two exponentials per request, a tenth of a node's CPU on
// pipelined hits. So GETs are tallied and added to the meter together:
// every loadBatch GETs, or once loadPeriod has passed. A reply carries
// the load at the last addition plus the GETs tallied since, each of which
// counts about one in a window much longer than loadPeriod.

const (
	// loadBatch is how many GETs are tallied before they are added to
	// the meter.
	loadBatch = 32
	// maxLoadPeriod bounds how long tallied GETs wait to be added; a
	// node's period is at most a hundredth of its LoadWindow, so the
	// load in a reply is off by at most about 1 %.
	maxLoadPeriod = time.Millisecond
)

// loadTally holds the GETs not yet added to the meter and the load at the
// last addition.
type loadTally struct {
	pending atomic.Uint64 // GETs not yet added to the meter
	at      atomic.Int64  // when they last were (Node.now's clock); 0: never
	load    atomic.Uint32 // the meter's load at at
	period  int64         // ns: how long tallied GETs may wait
	// mu is held by the one goroutine adding the tally to the meter;
	// others that find it held go on with the last load.
	mu sync.Mutex
}

func loadPeriod(window time.Duration) int64 {
	return int64(min(maxLoadPeriod, window/100))
}

// countGet tallies a GET that arrived at now and returns how many the
// tally holds with it.
func (n *Node) countGet(now int64) uint64 {
	t := &n.tally
	p := t.pending.Add(1)
	if p >= loadBatch || now-t.at.Load() >= t.period {
		n.addTally(now)
	}
	return p
}

// addTally adds the tallied GETs to the meter and records the load at now,
// unless another goroutine is doing so.
func (n *Node) addTally(now int64) {
	t := &n.tally
	if !t.mu.TryLock() {
		return
	}
	defer t.mu.Unlock()
	if p := t.pending.Swap(0); p > 0 {
		// Every tallied GET arrived before at+period: countGet adds the
		// tally once that has passed. An idle node adds them when asked.
		at := now
		if last := t.at.Load(); last != 0 {
			at = min(now, last+t.period)
		}
		n.meter.Add(p, at)
	}
	t.load.Store(n.meterLoad(now))
	t.at.Store(now)
}

// loadAt is the load stamped into replies at now: the load at the last
// addition and the GETs tallied since.
func (n *Node) loadAt(now int64) uint32 {
	t := &n.tally
	if now-t.at.Load() >= t.period {
		n.addTally(now)
	}
	return uint32(min(uint64(t.load.Load())+t.pending.Load(), math.MaxUint32))
}

// meterLoad is the meter's decayed query rate at now in queries per
// LoadWindow, rounded.
func (n *Node) meterLoad(now int64) uint32 {
	q := n.meter.Rate(now)*n.cfg.LoadWindow.Seconds() + 0.5
	if q >= math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(q)
}
