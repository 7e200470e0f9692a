package mrc

import (
	"encoding/binary"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// benchStreamLen is the length of the benchmark streams, a power of two.
const benchStreamLen = 1 << 20

// benchKeys returns the 8-byte keys of a Zipf-0.99 stream over 1M key ids,
// the skew of a cache node's requests.
func benchKeys() (keys [][]byte, ids []uint32) {
	ids = zipfTrace(0.99)(rand.New(rand.NewPCG(15, 16)), 1_000_000, benchStreamLen)
	flat := make([]byte, 8*len(ids))
	keys = make([][]byte, len(ids))
	for i, id := range ids {
		keys[i] = binary.BigEndian.AppendUint64(flat[8*i:8*i], uint64(id))
	}
	return keys, ids
}

// keysWhere returns n 8-byte keys whose hashes satisfy keep.
func keysWhere(n int, keep func(hash uint64) bool) [][]byte {
	var keys [][]byte
	for id := uint64(0); len(keys) < n; id++ {
		key := binary.BigEndian.AppendUint64(nil, id)
		if keep(xxhash.Sum64(key)) {
			keys = append(keys, key)
		}
	}
	return keys
}

// BenchmarkObserve measures one reference on each path: a key already in
// the sample set (locked: stack distance and histogram update), a key
// below the sampling threshold (a hash and an atomic increment), and a
// Zipf-0.99 stream over 1M keys with the default 8K samples.
func BenchmarkObserve(b *testing.B) {
	b.Run("sampled", func(b *testing.B) {
		e := mustNew(b, Config{})
		keys := keysWhere(4096, func(uint64) bool { return true })
		for _, key := range keys {
			e.Observe(key)
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			e.Observe(keys[i%len(keys)])
		}
	})
	b.Run("unsampled", func(b *testing.B) {
		e := mustNew(b, Config{InitialRate: 0.01})
		threshold := e.Stats().Threshold
		keys := keysWhere(4096, func(hash uint64) bool { return hash >= threshold })
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			e.Observe(keys[i%len(keys)])
		}
	})
	b.Run("zipf-0.99", func(b *testing.B) {
		e := mustNew(b, Config{})
		keys, _ := benchKeys()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			e.Observe(keys[i%benchStreamLen])
		}
		b.ReportMetric(float64(e.Stats().Sampled)/float64(e.Stats().Observed), "sampled/op")
	})
}

// BenchmarkObserveParallel is the Zipf stream of BenchmarkObserve from
// GOMAXPROCS goroutines.
func BenchmarkObserveParallel(b *testing.B) {
	e := mustNew(b, Config{})
	keys, _ := benchKeys()
	var offset atomic.Uint64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(offset.Add(7919))
		for pb.Next() {
			e.Observe(keys[i%benchStreamLen])
			i++
		}
	})
}

// BenchmarkExactLRU is the cost per reference of the exact simulator of
// the tests (Mattson's algorithm with a Fenwick tree over trace positions)
// on the Zipf stream of BenchmarkObserve, for comparison. Its memory grows
// with the number of distinct keys and the trace length.
func BenchmarkExactLRU(b *testing.B) {
	_, ids := benchKeys()
	x := newExactLRU(1_000_000, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		x.access(ids[i%benchStreamLen])
	}
}

// BenchmarkCurve measures a curve query on a full histogram.
func BenchmarkCurve(b *testing.B) {
	e := mustNew(b, Config{})
	keys, _ := benchKeys()
	for _, key := range keys {
		e.Observe(key)
	}
	sizes := []int{10, 100, 1000, 10_000, 100_000}
	b.ReportAllocs()
	for b.Loop() {
		e.Curve(sizes)
	}
}
