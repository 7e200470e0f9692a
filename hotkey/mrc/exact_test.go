package mrc

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
)

// exactLRU is the ground truth: Mattson's stack algorithm for LRU, with
// the stack kept as a Fenwick tree over trace positions (Bennett and
// Kruskal; Olken), so each reference costs O(log n). Keys are dense ids
// below the key-space size given to newExactLRU.
type exactLRU struct {
	last       []int32  // key → position of its last reference, or -1
	marks      []int32  // Fenwick tree, 1-based: 1 at every last-reference position
	distinct   int      // keys referenced so far
	now        int      // position of the next reference
	reuses     []uint64 // reuses[d]: references at stack distance d (1-based)
	coldMisses uint64
}

func newExactLRU(keys, traceLen int) *exactLRU {
	x := &exactLRU{last: make([]int32, keys), marks: make([]int32, traceLen+1)}
	for i := range x.last {
		x.last[i] = -1
	}
	return x
}

func (x *exactLRU) mark(pos int, delta int32) {
	for i := pos + 1; i < len(x.marks); i += i & -i {
		x.marks[i] += delta
	}
}

// marksBefore counts the last-reference positions before pos.
func (x *exactLRU) marksBefore(pos int) int {
	var n int32
	for i := pos; i > 0; i -= i & -i {
		n += x.marks[i]
	}
	return int(n)
}

func (x *exactLRU) access(key uint32) {
	if prev := x.last[key]; prev >= 0 {
		d := x.distinct - x.marksBefore(int(prev))
		for len(x.reuses) <= d {
			x.reuses = append(x.reuses, 0)
		}
		x.reuses[d]++
		x.mark(int(prev), -1)
	} else {
		x.coldMisses++
		x.distinct++
	}
	x.last[key] = int32(x.now)
	x.mark(x.now, 1)
	x.now++
}

// curve returns the exact miss ratio at each size.
func (x *exactLRU) curve(sizes []int) []float64 {
	hitsUpTo := make([]uint64, len(x.reuses)+1) // hitsUpTo[c]: reuses at distance ≤ c
	for d := 1; d < len(x.reuses); d++ {
		hitsUpTo[d] = hitsUpTo[d-1] + x.reuses[d]
	}
	hitsUpTo[len(x.reuses)] = hitsUpTo[max(len(x.reuses)-1, 0)]
	ratios := make([]float64, len(sizes))
	for i, size := range sizes {
		ratios[i] = 1
		if x.now > 0 && size > 0 {
			hits := hitsUpTo[min(size, len(x.reuses))]
			ratios[i] = 1 - float64(hits)/float64(x.now)
		}
	}
	return ratios
}

// naiveLRUCurve is Mattson's algorithm with a plain list as the stack, in
// O(distinct keys) per reference; it checks exactLRU on small traces.
func naiveLRUCurve(trace []uint32, sizes []int) []float64 {
	var stack []uint32 // most recent first
	var reuses []int   // stack distance of every re-reference
	for _, key := range trace {
		pos := -1
		for i, k := range stack {
			if k == key {
				pos = i
				break
			}
		}
		if pos >= 0 {
			reuses = append(reuses, pos+1)
			stack = append(stack[:pos], stack[pos+1:]...)
		}
		stack = append([]uint32{key}, stack...)
	}
	ratios := make([]float64, len(sizes))
	for i, size := range sizes {
		hits := 0
		for _, d := range reuses {
			if d <= size {
				hits++
			}
		}
		ratios[i] = 1
		if len(trace) > 0 && size > 0 {
			ratios[i] = 1 - float64(hits)/float64(len(trace))
		}
	}
	return ratios
}

// zipfSampler draws ranks 0..n-1 with P(rank k) ∝ 1/(k+1)^s by inverting
// the cumulative distribution; unlike rand.Zipf it accepts s ≤ 1. A guide
// table (Chen and Asau) gives the search a starting point, so a draw takes
// O(1) expected steps.
type zipfSampler struct {
	cdf   []float64 // cdf[k] = P(rank ≤ k)
	guide []int32   // guide[j] = smallest k with cdf[k] ≥ j/len(guide)
}

func newZipfSampler(n int, s float64) *zipfSampler {
	cdf := make([]float64, n)
	var sum float64
	for k := range cdf {
		sum += math.Pow(float64(k+1), -s)
		cdf[k] = sum
	}
	for k := range cdf {
		cdf[k] /= sum
	}
	cdf[n-1] = 1
	guide := make([]int32, n)
	k := 0
	for j := range guide {
		for cdf[k] < float64(j)/float64(n) {
			k++
		}
		guide[j] = int32(k)
	}
	return &zipfSampler{cdf: cdf, guide: guide}
}

func (z *zipfSampler) next(r *rand.Rand) int {
	u := r.Float64()
	k := int(z.guide[int(u*float64(len(z.guide)))])
	for z.cdf[k] < u {
		k++
	}
	return k
}

// workload is a deterministic generator of a reference trace over the key
// ids 0..keys-1.
type workload struct {
	name  string
	keys  int // size of the key space
	refs  int // trace length
	trace func(r *rand.Rand, keys, refs int) []uint32
}

// permutedKeys maps popularity ranks to key ids at random.
func permutedKeys(r *rand.Rand, n int) []uint32 {
	ids := make([]uint32, n)
	for i, p := range r.Perm(n) {
		ids[i] = uint32(p)
	}
	return ids
}

func zipfTrace(s float64) func(r *rand.Rand, keys, refs int) []uint32 {
	return func(r *rand.Rand, keys, refs int) []uint32 {
		z := newZipfSampler(keys, s)
		ids := permutedKeys(r, keys)
		trace := make([]uint32, refs)
		for i := range trace {
			trace[i] = ids[z.next(r)]
		}
		return trace
	}
}

func uniformTrace(r *rand.Rand, keys, refs int) []uint32 {
	trace := make([]uint32, refs)
	for i := range trace {
		trace[i] = uint32(r.IntN(keys))
	}
	return trace
}

// scanTrace mixes Zipf-0.9 references to a tenth of the key space with
// sequential scans over the other nine tenths: every fourth block of 1/80
// of the trace is a scan that continues where the previous one stopped, so
// a quarter of the references are scans.
func scanTrace(r *rand.Rand, keys, refs int) []uint32 {
	hotKeys := keys / 10
	z := newZipfSampler(hotKeys, 0.9)
	ids := permutedKeys(r, hotKeys)
	block := max(refs/80, 1)
	scanned := 0
	trace := make([]uint32, refs)
	for i := range trace {
		if (i/block)%4 == 3 {
			trace[i] = uint32(hotKeys + scanned%(keys-hotKeys))
			scanned++
			continue
		}
		trace[i] = ids[z.next(r)]
	}
	return trace
}

// shiftTrace is Zipf 0.99 whose hot set changes halfway through: the
// second half ranks the keys by a new permutation.
func shiftTrace(r *rand.Rand, keys, refs int) []uint32 {
	z := newZipfSampler(keys, 0.99)
	trace := make([]uint32, refs)
	ids := permutedKeys(r, keys)
	for i := range trace {
		if i == refs/2 {
			ids = permutedKeys(r, keys)
		}
		trace[i] = ids[z.next(r)]
	}
	return trace
}

// observeIDs feeds key ids to the estimator as 8-byte big-endian keys.
func observeIDs(e *Estimator, ids []uint32) {
	var buf [8]byte
	for _, id := range ids {
		binary.BigEndian.PutUint64(buf[:], uint64(id))
		e.Observe(buf[:])
	}
}

// simulateExactLRU runs the exact simulator over a trace of key ids below
// keys.
func simulateExactLRU(keys int, ids []uint32) *exactLRU {
	x := newExactLRU(keys, len(ids))
	for _, id := range ids {
		x.access(id)
	}
	return x
}

func exactCurve(keys int, ids []uint32, sizes []int) []float64 {
	return simulateExactLRU(keys, ids).curve(sizes)
}

func meanAbsoluteError(a, b []float64) float64 {
	var sum float64
	for i := range a {
		sum += math.Abs(a[i] - b[i])
	}
	return sum / float64(len(a))
}
