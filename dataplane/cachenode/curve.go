package cachenode

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/hotkey/mrc"
)

// The node's miss-ratio curve (GET /mrc).
//
// A control loop that sizes cache layers, as D3N does between its L1 and
// L2 (Kaynar et al., "D3N: A multi-layer cache for the rest of us",
// §IV-C, Algorithms 1 and 2: a shadow LRU of full size per layer counts
// hits by stack position; periodically the resulting miss-ratio curves
// predict each layer's miss rate at other sizes and capacity moves to
// where it lowers the mean latency), needs every node's LRU miss-ratio
// curve at capacities other than its own. Instead of a shadow LRU of
// every key, a node estimates the curve online with SHARDS (Waldspurger
// et al., FAST '15; package hotkey/mrc): a fixed-size spatial sample of
// the keys, whose reuse distances, scaled by the sampling rate, estimate
// those of the full stream in bounded memory (about 600 KB per
// estimator).
//
// The stream is the one an LRU cache at the node would see: every GET of a
// key the node serves — a hit, or a miss or hedged read (FlagCacheOnly) of
// a key it owns under its map (handleGet) — and nothing else: not writes
// or coherence traffic, not the reads refused while the node is not
// Active, not the misses of keys that another member owns (a reader
// routing by an older map).
//
// The curve follows a shifting workload by windows (Config.MRCWindow, 30 s
// by default): two estimators alternate, one observing the current window
// while the other keeps the last complete one, which is what the node
// reports (the current one until a window has ended). At the end of a
// window the estimator of the window before is reset and observes the next
// one. So the report estimates what an LRU simulation of one window's
// reads computes, and a new hot set shows in the next report, where D3N's
// histogram, scaled down each period into a moving average, keeps the old
// one's distances for several periods. The price, as for any reset, is
// that the first read of each key in a window counts as a cold miss (see
// the hotkey/mrc package documentation, Epochs): windows should be long
// compared with the time a hot key takes to be read again. The node's
// hits are counted over the same windows, from its hit counter at each
// window's ends.
//
// The hot path stays cheap. The key's hash is the first half of its wire
// digest (XXH3-128, verified against the key when the packet was parsed),
// so nothing is hashed again; an unsampled key costs a striped atomic
// increment and a compare with the sampling threshold, and takes no lock.
// The sampling rate starts at Config.MRC.InitialRate, by default such that
// one sampled key stands for at most a hundredth of the capacity
// (mrcInitialRate): at the default 10,000 entries about 1 % of the keys
// (and of the reads, on average) take the estimator's lock.

// DefaultMRCWindow is the default of Config.MRCWindow.
const DefaultMRCWindow = 30 * time.Second

const (
	// mrcPoints is about how many sizes a report gives the curve at.
	mrcPoints = 64
	// mrcReach is how many times its capacity the largest size of a
	// node's report is.
	mrcReach = 4
	// mrcResolution is the capacity, in sampling resolutions (entries
	// each sampled key stands for), that sets the default initial rate.
	mrcResolution = 100
)

// mrcInitialRate is the default Config.MRC.InitialRate of a node of the
// given capacity: 1 up to mrcResolution entries, then mrcResolution /
// capacity, so that the curve resolves a hundredth of the capacity.
func mrcInitialRate(capacity int) float64 {
	if capacity <= mrcResolution {
		return 1
	}
	return float64(mrcResolution) / float64(capacity)
}

// curveWindows are the node's two estimators: one observes the current
// window, the other holds the last complete one.
type curveWindows struct {
	// cur is the estimator of the current window, one of est. Readers
	// load it without a lock; rotate swaps it.
	cur atomic.Pointer[mrc.Estimator]
	est [2]*mrc.Estimator

	// mu guards the fields below and serialises rotate with the reports,
	// which read the estimator that rotate resets.
	mu        sync.Mutex
	start     time.Time       // when the current window began
	startHits uint64          // the node's hit counter then
	done      *completedCurve // the last complete window; nil until one ends
	rotations int             // windows ended
}

// completedCurve is a window that has ended.
type completedCurve struct {
	est     *mrc.Estimator
	seconds float64
	hits    uint64
}

// newCurveWindows creates the estimators of a node; the first window
// begins at start.
func newCurveWindows(cfg mrc.Config, start time.Time) (*curveWindows, error) {
	w := &curveWindows{start: start}
	for i := range w.est {
		e, err := mrc.New(cfg)
		if err != nil {
			return nil, fmt.Errorf("cannot create miss-ratio estimator: %w", err)
		}
		w.est[i] = e
	}
	w.cur.Store(w.est[0])
	return w, nil
}

// observeRead records a read of req's key, one the node serves, in the
// current window. It takes no lock unless the key is sampled.
func (n *Node) observeRead(req *wire.Message) {
	n.curve.cur.Load().ObserveHash(binary.BigEndian.Uint64(req.Digest[:8]))
}

// rotateCurve ends the current window at the time at and begins the next:
// the estimator of the window before is reset and observes from now on.
// The node's loop calls it every Config.MRCWindow; tests call it
// themselves (MRCWindow < 0).
func (n *Node) rotateCurve(at time.Time) {
	w := n.curve
	w.mu.Lock()
	defer w.mu.Unlock()
	hits := n.stats.hits.Load()
	cur := w.cur.Load()
	next := w.est[0]
	if next == cur {
		next = w.est[1]
	}
	// A reader that loaded cur just before the swap may still record its
	// read there, in the window that ended, as it may still count its hit
	// before the snapshot above: either is a read or two per reader.
	next.Reset()
	w.cur.Store(next)
	w.done = &completedCurve{est: cur, seconds: max(at.Sub(w.start).Seconds(), 0), hits: hits - w.startHits}
	w.start, w.startHits = at, hits
	w.rotations++
}

// rotateCurves ends a window every Config.MRCWindow until Close.
func (n *Node) rotateCurves() {
	t := time.NewTicker(n.cfg.MRCWindow)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
			n.rotateCurve(time.Now())
		}
	}
}

// MissRatioCurve is the node's LRU miss-ratio curve over its last complete
// window (Config.MRCWindow) of reads, or over the current one until one
// has ended, with its hits in the same window, as GET /mrc answers it.
func (n *Node) MissRatioCurve() metrics.MissRatioCurve {
	w := n.curve
	w.mu.Lock()
	defer w.mu.Unlock()
	if d := w.done; d != nil {
		return curveReport(d.est, d.seconds, d.hits, n.capacity())
	}
	return curveReport(w.cur.Load(), max(time.Since(w.start).Seconds(), 0),
		n.stats.hits.Load()-w.startHits, n.capacity())
}

// curveReport is est's curve at about mrcPoints sizes up to mrcReach times
// capacity (up to the largest reuse distance seen when capacity is 0,
// unbounded), with the window's length and hits.
func curveReport(est *mrc.Estimator, seconds float64, hits uint64, capacity int) metrics.MissRatioCurve {
	requests := est.Stats().Observed
	// A hit counted just before the window ended may be observed just
	// after (rotateCurve): never report more hits than reads.
	hits = min(hits, requests)
	largest := capacity * mrcReach
	if capacity <= 0 {
		largest = 1
		if p := est.Points(0, 1); len(p) == 1 {
			largest = max(p[0].Size, 1)
		}
	}
	sizes := curveSizes(largest, capacity, mrcPoints)
	ratios := est.Curve(sizes)
	out := metrics.MissRatioCurve{Window: seconds, Requests: requests, Hits: hits, Entries: max(capacity, 0),
		Points: make([]metrics.CurvePoint, len(sizes))}
	for i, s := range sizes {
		out.Points[i] = metrics.CurvePoint{Entries: s, MissRatio: ratios[i]}
	}
	return out
}

// curveSizes returns at most n+1 distinct increasing sizes from 1 to
// largest, spread log-uniformly (so equally fine at a tenth of the
// capacity as at twice it), with capacity among them when it is in range.
func curveSizes(largest, capacity, n int) []int {
	largest, n = max(largest, 1), max(n, 2)
	sizes := make([]int, 0, n+1)
	step := math.Log(float64(largest)) / float64(n-1)
	for i := range n {
		s := int(math.Round(math.Exp(step * float64(i))))
		if i == n-1 {
			s = largest
		}
		if len(sizes) == 0 || s > sizes[len(sizes)-1] {
			sizes = append(sizes, s)
		}
	}
	if capacity >= 1 && capacity <= largest {
		if i, found := slices.BinarySearch(sizes, capacity); !found {
			sizes = slices.Insert(sizes, i, capacity)
		}
	}
	return sizes
}
