package client

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/distcache/distcache/hotkey"
)

// Warm reads. Where the client reads storage itself (direct reads,
// storage.go), a read of a key that no cache node can be holding gains
// nothing from asking a node first: the node answers "read it yourself",
// and the read costs a node's wake-up and a round trip on top of the
// Redis GET a proxy would send. So the client keeps a hot-key detector of
// its own (package hotkey, the nodes' algorithm: a Count-Min sketch with
// an adaptive threshold, NetCache §4.4) over every read it routes, and
// asks the nodes only for the keys that are warm: those whose estimate
// reached the threshold in this interval, or that were among the hottest
// reported in the last one. Every other read goes to the key's Redis
// straight away, as behind a proxy.
//
// The nodes still see every read of a warm key, hits and misses, so they
// detect and cache the hot keys as before; a key becomes warm at the
// client before it can be hot at a node, since a node's detector counts
// a share of the same reads. The choice only decides where a read goes:
// both ways are linearizable (a node's copy by the coherence protocol, a
// direct read as storage.go argues), so a wrong guess costs time, never
// correctness.

const (
	// warmInterval is how long the detector counts before the next
	// interval starts (the nodes' default interval).
	warmInterval = time.Second
	// warmKeys bounds the keys kept warm from one interval to the next:
	// more than a small cluster's caches hold, few enough that the set is
	// cheap to look up.
	warmKeys = 4096
)

// warmReads is the client's detector of warm keys.
type warmReads struct {
	det *hotkey.Detector
	// last holds the keys reported hottest in the last interval
	// (immutable once stored).
	last atomic.Pointer[map[string]struct{}]
	// next is when the current interval ends (the client's clock).
	next atomic.Int64
	// rolling guards the start of the next interval: one reader starts
	// it, the others go on counting meanwhile.
	rolling sync.Mutex
}

func newWarmReads(seed uint64) (*warmReads, error) {
	det, err := hotkey.NewDetector(hotkey.Config{MaxReports: warmKeys, Seed: seed})
	if err != nil {
		return nil, err
	}
	w := &warmReads{det: det}
	w.last.Store(&map[string]struct{}{})
	return w, nil
}

// warm counts a read of key at now (the client's clock) and reports whether
// a node should be asked for it.
func (w *warmReads) warm(key string, now int64) bool {
	if now >= w.next.Load() {
		w.roll(now)
	}
	if w.det.Record(key) {
		return true
	}
	_, ok := (*w.last.Load())[key]
	return ok
}

// roll ends the interval: the hottest keys it reported are kept warm
// through the next one.
func (w *warmReads) roll(now int64) {
	if !w.rolling.TryLock() {
		return
	}
	defer w.rolling.Unlock()
	if now < w.next.Load() {
		return
	}
	dec := w.det.Plan(warmKeys)
	last := make(map[string]struct{}, len(dec.Insert))
	for _, k := range dec.Insert {
		last[k] = struct{}{}
	}
	w.last.Store(&last)
	w.next.Store(now + int64(warmInterval))
}
