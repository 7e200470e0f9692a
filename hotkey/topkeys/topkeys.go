// Package topkeys finds the most frequent keys of a stream of reads and
// writes in bounded memory, for the control loop that decides how many
// copies each hot key gets (package placement/copies).
//
// It is the Space-Saving algorithm (Metwally, Agrawal and El Abbadi,
// "Efficient Computation of Frequent and Top-k Elements in Data Streams",
// ICDT 2005): at most Capacity keys are monitored; a key that is not, when
// all slots are taken, replaces the monitored key with the smallest count
// and inherits that count as its possible overestimate. Every key whose
// true count exceeds N/Capacity (N: the operations counted) is monitored.
// The reads and writes reported for a key are those seen since it was last
// admitted, a lower bound of its true counts; Error bounds what it may
// have had before.
//
// A storage shim counts every read it serves and every write it applies;
// Rotate ends an interval and keeps its counts as the snapshot the shim
// reports at GET /hotkeys.
package topkeys

import (
	"cmp"
	"container/heap"
	"slices"
	"sync"
	"time"
)

// Count is one key's operations in an interval.
type Count struct {
	Key    string
	Reads  uint64
	Writes uint64
	// Error is the count the key may have had before it was monitored.
	Error uint64
}

// Snapshot is the outcome of an interval: its length and its keys,
// most frequent first.
type Snapshot struct {
	Interval time.Duration
	Keys     []Count
}

// Counter counts the operations of the most frequent keys. It is safe for
// concurrent use.
type Counter struct {
	capacity int

	mu    sync.Mutex        // guards the fields below
	slots map[string]*entry // monitored keys
	order minHeap           // the same entries, least counted first
	start time.Time         // when the interval began
	last  Snapshot          // the previous interval's outcome
}

type entry struct {
	Count
	total uint64 // Reads + Writes + Error: the Space-Saving count
	index int    // in order
}

// New returns a counter that monitors at most capacity keys (at least 1),
// its first interval starting at now.
func New(capacity int, now time.Time) *Counter {
	capacity = max(capacity, 1)
	return &Counter{capacity: capacity, slots: make(map[string]*entry, capacity), start: now}
}

// Read counts a read of key.
func (c *Counter) Read(key []byte) { c.add(key, false) }

// Write counts a write of key.
func (c *Counter) Write(key []byte) { c.add(key, true) }

func (c *Counter) add(key []byte, write bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.slots[string(key)] // no allocation for the lookup
	switch {
	case ok:
	case len(c.order) < c.capacity:
		e = &entry{Count: Count{Key: string(key)}}
		c.slots[e.Key] = e
		heap.Push(&c.order, e)
	default:
		e = c.order[0] // the least counted key gives up its slot
		delete(c.slots, e.Key)
		e.Count = Count{Key: string(key), Error: e.total}
		c.slots[e.Key] = e
	}
	if write {
		e.Writes++
	} else {
		e.Reads++
	}
	e.total++
	heap.Fix(&c.order, e.index)
}

// Rotate ends the interval at now, keeps its counts as the snapshot Last
// returns, and starts the next interval empty.
func (c *Counter) Rotate(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]Count, 0, len(c.order))
	for _, e := range c.order {
		keys = append(keys, e.Count)
	}
	slices.SortFunc(keys, func(a, b Count) int {
		return cmp.Or(cmp.Compare(b.Reads+b.Writes, a.Reads+a.Writes), cmp.Compare(a.Key, b.Key))
	})
	c.last = Snapshot{Interval: now.Sub(c.start), Keys: keys}
	c.start = now
	clear(c.slots)
	c.order = c.order[:0]
}

// Last returns the snapshot of the interval Rotate ended last (empty before
// the first Rotate). Its Keys must not be modified.
func (c *Counter) Last() Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// minHeap orders entries by their Space-Saving count, least first.
type minHeap []*entry

func (h minHeap) Len() int           { return len(h) }
func (h minHeap) Less(i, j int) bool { return h[i].total < h[j].total }
func (h minHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *minHeap) Push(x any) {
	e := x.(*entry)
	e.index = len(*h)
	*h = append(*h, e)
}

func (h *minHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
