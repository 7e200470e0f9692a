package routing

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

const benchNodes = 64

func benchTable(b *testing.B) *LoadTable {
	b.Helper()
	tbl := mustTable(b, AgingConfig{StaleAfter: 1e6, HalfLife: 1e6})
	rng := rand.New(rand.NewPCG(1, 1))
	for n := range NodeID(benchNodes) {
		tbl.Observe(n, rng.Float64()*1000, 0)
	}
	return tbl
}

func benchChoose(b *testing.B, k int) {
	for _, bc := range []struct {
		name string
		now  int64
	}{
		{"fresh", 0},   // loads younger than StaleAfter: no aging math
		{"stale", 5e6}, // every load aged (one Exp2 per candidate)
	} {
		b.Run(bc.name, func(b *testing.B) {
			tbl := benchTable(b)
			rng := rand.New(rand.NewPCG(2, 2))
			sets := make([][]Candidate, 1024)
			for i := range sets {
				sets[i] = make([]Candidate, k)
				for j := range sets[i] {
					sets[i][j] = Candidate{Node: NodeID(rng.IntN(benchNodes)), Capacity: 1}
				}
			}
			r := NewRouter(tbl, 3)
			b.ReportAllocs()
			sink := 0
			i := 0
			for b.Loop() {
				sink += r.Choose(sets[i&1023], bc.now)
				i++
			}
			_ = sink
		})
	}
}

func BenchmarkChoose2(b *testing.B) { benchChoose(b, 2) }
func BenchmarkChoose4(b *testing.B) { benchChoose(b, 4) }

func BenchmarkObserve(b *testing.B) {
	tbl := benchTable(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		tbl.Observe(NodeID(i&(benchNodes-1)), float64(i), int64(i))
		i++
	}
}

func BenchmarkObserveParallel(b *testing.B) {
	tbl := benchTable(b)
	var seed atomic.Uint64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := int(seed.Add(1)) * 7919
		for pb.Next() {
			tbl.Observe(NodeID(i&(benchNodes-1)), float64(i), int64(i))
			i++
		}
	})
}

func BenchmarkLoadMeterAdd(b *testing.B) {
	m := mustMeter(b, 1e8)
	b.ReportAllocs()
	now := int64(0)
	for b.Loop() {
		now += 100
		m.Add(1, now)
	}
}

func BenchmarkLoadMeterAddParallel(b *testing.B) {
	m := mustMeter(b, 1e8)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		now := int64(0)
		for pb.Next() {
			now += 100
			m.Add(1, now)
		}
	})
}

// mutexMeter is the straightforward alternative to LoadMeter: a (value,
// last-update) pair under a mutex. It exists only as a benchmark baseline for
// the lock-free design.
type mutexMeter struct {
	mu        sync.Mutex
	invWindow float64
	value     float64
	last      int64
}

func (m *mutexMeter) Add(n uint64, now int64) {
	m.mu.Lock()
	if now > m.last {
		m.value *= math.Exp(-float64(now-m.last) * m.invWindow)
		m.last = now
	}
	m.value += float64(n)
	m.mu.Unlock()
}

func BenchmarkLoadMeterAddMutexBaseline(b *testing.B) {
	m := &mutexMeter{invWindow: 1e-8}
	b.ReportAllocs()
	now := int64(0)
	for b.Loop() {
		now += 100
		m.Add(1, now)
	}
}

func BenchmarkLoadMeterAddMutexBaselineParallel(b *testing.B) {
	m := &mutexMeter{invWindow: 1e-8}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		now := int64(0)
		for pb.Next() {
			now += 100
			m.Add(1, now)
		}
	})
}
