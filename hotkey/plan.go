package hotkey

import (
	"cmp"
	"container/heap"
	"slices"
)

// Decision is the outcome of one interval: the keys to insert into the cache,
// hottest first, and the tracked keys to evict, coldest first.
type Decision struct {
	Insert []string
	Evict  []string
	// Hits lists every tracked key with its hits in the interval, most hit
	// first: what the node reports of the keys it serves (GET /hotkeys).
	Hits []KeyHits
}

// KeyHits is a tracked key's hit count in one interval.
type KeyHits struct {
	Key  string
	Hits uint64
}

// trackedKey is a tracked key with its hit count in the interval.
type trackedKey struct {
	key   string
	count uint64
}

// Plan decides the cache update of the interval that ends and starts the
// next one. capacity is the number of entries the cache can hold (a negative
// capacity counts as 0).
//
// The candidates are this interval's reported keys that are not tracked,
// each with the larger of its reported count and its current sketch estimate
// (a key keeps being counted after its report, so the estimate at Plan time
// ranks candidates by their misses over the whole interval, not by the
// threshold they all crossed). Plan takes the top capacity candidates (by
// count, ties by key) and:
//
//  1. if more keys are tracked than capacity, evicts the coldest tracked
//     keys (by this interval's hit counts, ties by key) until they fit;
//  2. inserts candidates, hottest first, into the free entries;
//  3. then, while the next hottest candidate has a strictly larger count
//     than the coldest remaining tracked key, evicts that key and inserts the
//     candidate. A tracked key is never evicted for a colder or equally hot
//     candidate.
//
// Before returning, Plan starts the next interval like [Detector.Reset];
// reports made while Plan runs may be lost with that reset. Plan does not
// change the tracked set: the caller applies the decision to the cache, then
// calls Untrack for every evicted key and Track for every inserted key.
func (d *Detector) Plan(capacity int) Decision {
	d.planMu.Lock()
	defer d.planMu.Unlock()
	capacity = max(capacity, 0)

	reported := d.candidates()
	cands := reported[:0]
	for _, c := range reported {
		if d.isTracked(c.Key) {
			continue
		}
		c.Count = max(c.Count, d.Estimate(c.Key))
		cands = append(cands, c)
	}
	hot := TopK(cands, capacity)

	tracked := d.trackedCounts()
	var hits []KeyHits
	for _, t := range tracked {
		hits = append(hits, KeyHits{Key: t.key, Hits: t.count})
	}
	slices.SortFunc(hits, func(a, b KeyHits) int { return cmp.Or(cmp.Compare(b.Hits, a.Hits), cmp.Compare(a.Key, b.Key)) })
	dec := decide(hot, tracked, capacity)
	dec.Hits = hits
	d.resetLocked()
	return dec
}

// decide computes the decision for hot (the top candidates, best first),
// the tracked keys with their hit counts (in any order; sorted in place) and
// a capacity >= 0.
func decide(hot []Candidate, cached []trackedKey, capacity int) Decision {
	slices.SortFunc(cached, func(a, b trackedKey) int {
		if c := cmp.Compare(a.count, b.count); c != 0 {
			return c
		}
		return cmp.Compare(a.key, b.key)
	})
	var dec Decision
	cold := 0 // next tracked key to consider for eviction
	for ; len(cached)-cold > capacity; cold++ {
		dec.Evict = append(dec.Evict, cached[cold].key)
	}
	free := capacity - (len(cached) - cold)
	for _, c := range hot {
		switch {
		case free > 0:
			free--
		case cold < len(cached) && uint64(c.Count) > cached[cold].count:
			dec.Evict = append(dec.Evict, cached[cold].key)
			cold++
		default:
			return dec // candidates are sorted, so no later one can replace
		}
		dec.Insert = append(dec.Insert, c.Key)
	}
	return dec
}

// better reports whether a ranks before b: larger count, then smaller key.
func better(a, b Candidate) bool {
	if a.Count != b.Count {
		return a.Count > b.Count
	}
	return a.Key < b.Key
}

// worstFirst is a heap whose root is its worst candidate.
type worstFirst []Candidate

func (h worstFirst) Len() int           { return len(h) }
func (h worstFirst) Less(i, j int) bool { return better(h[j], h[i]) }
func (h worstFirst) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }

// Push and Pop are required by heap.Interface but unused: TopK only calls
// Init and Fix, which avoids boxing a Candidate per operation.
func (h *worstFirst) Push(x any) { *h = append(*h, x.(Candidate)) }
func (h *worstFirst) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// TopK returns the k best items, best first, where an item is better than
// another if its count is larger or, on equal counts, its key is smaller.
// It does not modify items and runs in O(n log k) time with a heap of k
// items. It returns nil if k <= 0 or items is empty.
func TopK(items []Candidate, k int) []Candidate {
	k = min(k, len(items))
	if k <= 0 {
		return nil
	}
	out := make(worstFirst, k)
	copy(out, items[:k])
	work := out
	h := &work // one boxed pointer for all heap calls; *h shrinks, out does not
	heap.Init(h)
	for _, it := range items[k:] {
		if better(it, out[0]) {
			out[0] = it
			heap.Fix(h, 0)
		}
	}
	// Heap sort in place: move the worst to the back until the heap is empty.
	for n := k - 1; n > 0; n-- {
		out.Swap(0, n)
		work = out[:n]
		heap.Fix(h, 0)
	}
	return out
}
