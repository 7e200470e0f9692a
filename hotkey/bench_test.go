package hotkey

import (
	"sync/atomic"
	"testing"
)

// benchKeys returns a Zipf-0.99 query stream over 100k keys, so the
// benchmarks see the skew (and the contention on hot counters) of a cache.
func benchKeys() []string {
	const n = 1 << 16
	keys := keyNames(100_000)
	z := newZipf(len(keys), 0.99, 1)
	stream := make([]string, n)
	for i := range stream {
		stream[i] = keys[z.next()]
	}
	return stream
}

func BenchmarkRecordMiss(b *testing.B) {
	stream := benchKeys()
	d := mustDetector(b, Config{Threshold: 64})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		d.RecordMiss(stream[i&(len(stream)-1)])
	}
}

func BenchmarkRecordMissParallel(b *testing.B) {
	stream := benchKeys()
	d := mustDetector(b, Config{Threshold: 64})
	var next atomic.Uint64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(next.Add(7919)) // different offsets per goroutine
		for pb.Next() {
			d.RecordMiss(stream[i&(len(stream)-1)])
			i++
		}
	})
}

func benchHitDetector(b *testing.B) (*Detector, []string) {
	stream := benchKeys()
	d := mustDetector(b, Config{})
	for _, k := range keyNames(10_000) { // the 10k hottest keys are cached
		d.Track(k)
	}
	return d, stream
}

func BenchmarkRecordHit(b *testing.B) {
	d, stream := benchHitDetector(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		d.RecordHit(stream[i&(len(stream)-1)])
	}
}

func BenchmarkRecordHitParallel(b *testing.B) {
	d, stream := benchHitDetector(b)
	var next atomic.Uint64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(next.Add(7919))
		for pb.Next() {
			d.RecordHit(stream[i&(len(stream)-1)])
			i++
		}
	})
}

func BenchmarkPlan(b *testing.B) {
	stream := benchKeys()
	d := mustDetector(b, Config{Threshold: 16})
	for _, k := range keyNames(10_000)[5000:] {
		d.Track(k)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, k := range stream {
			d.RecordMiss(k)
		}
		_ = d.Plan(5000)
	}
}

// BenchmarkPlanIdle is an interval of a node that saw no miss: the reset
// of a sketch it did not touch.
func BenchmarkPlanIdle(b *testing.B) {
	d := mustDetector(b, Config{Threshold: 16})
	b.ReportAllocs()
	for b.Loop() {
		_ = d.Plan(5000)
	}
}

func BenchmarkTopK(b *testing.B) {
	items := make([]Candidate, 1024)
	for i, k := range keyNames(len(items)) {
		items[i] = Candidate{Key: k, Count: uint32(i * 7919 % 1000)}
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = TopK(items, 64)
	}
}
