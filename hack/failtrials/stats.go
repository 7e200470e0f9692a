package main

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// op is one probe operation, its times relative to the start of its
// trial's load.
type op struct {
	write     bool
	key       int // index of the probe key
	call, ret time.Duration
	ok        bool // a write acknowledged, a read answered (a value or not found)
	// layer and node say who answered a read: a cache node of layer (hit
	// says whether from its copy), or the shim (layer -1).
	layer int8
	node  uint32
	hit   bool
}

// recovery is when every one of keys probe keys had a write, called at or
// after fault, acknowledged: the latest of each key's earliest such
// acknowledgement, less fault. ok is false when some key had none.
func recovery(ops []op, keys int, fault time.Duration) (time.Duration, bool) {
	first := make([]time.Duration, keys)
	for i := range first {
		first[i] = -1
	}
	for _, o := range ops {
		if !o.write || !o.ok || o.call < fault || o.key < 0 || o.key >= keys {
			continue
		}
		if first[o.key] < 0 || o.ret < first[o.key] {
			first[o.key] = o.ret
		}
	}
	var latest time.Duration
	for _, t := range first {
		if t < 0 {
			return 0, false
		}
		latest = max(latest, t-fault)
	}
	return latest, true
}

// failedReads counts the reads of ops that got no answer, and the reads.
func failedReads(ops []op) (failed, reads int) {
	for _, o := range ops {
		if o.write {
			continue
		}
		reads++
		if !o.ok {
			failed++
		}
	}
	return failed, reads
}

// worstBin is the lowest rate of completed operations (writes
// acknowledged, reads answered) of those keep accepts, over the whole bins
// of width bin from fault to end, as a fraction of their rate over the
// window before the fault. It is NaN when nothing completed before the
// fault or no whole bin fits.
func worstBin(ops []op, fault, end, before, bin time.Duration, keep func(op) bool) float64 {
	if bin <= 0 || before <= 0 || end-fault < bin {
		return math.NaN()
	}
	bins := make([]int, (end-fault)/bin)
	var pre int
	for _, o := range ops {
		switch {
		case !o.ok || !keep(o):
		case o.ret >= fault-before && o.ret < fault:
			pre++
		case o.ret >= fault && o.ret < fault+time.Duration(len(bins))*bin:
			bins[(o.ret-fault)/bin]++
		}
	}
	if pre == 0 {
		return math.NaN()
	}
	rateBefore := float64(pre) / before.Seconds()
	return float64(slices.Min(bins)) / bin.Seconds() / rateBefore
}

// sample is one trial's write unavailability: d, or more than d when
// censored (the trial hit its bound first).
type sample struct {
	d        time.Duration
	censored bool
}

// percentile is the nearest-rank p-th percentile (0 < p ≤ 100) of s, with
// censored samples above every uncensored one; ok is false when s is
// empty.
func percentile(s []sample, p float64) (sample, bool) {
	if len(s) == 0 {
		return sample{}, false
	}
	sorted := slices.Clone(s)
	slices.SortStableFunc(sorted, func(a, b sample) int {
		if a.censored != b.censored {
			if a.censored {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.d, b.d)
	})
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1], true
}

// fractionPercentile is the nearest-rank p-th percentile of the numbers of
// xs that are not NaN; NaN when there are none.
func fractionPercentile(xs []float64, p float64) float64 {
	var v []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return math.NaN()
	}
	slices.Sort(v)
	rank := int(math.Ceil(p / 100 * float64(len(v))))
	return v[min(max(rank, 1), len(v))-1]
}

// anyOp keeps every operation; readOp keeps the reads.
func anyOp(op) bool    { return true }
func readOp(o op) bool { return !o.write }
