package workload

import (
	"math/rand/v2"
	"testing"
)

func BenchmarkZipfSample(b *testing.B) {
	z, err := NewZipf(100_000_000, 0.99)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	var sink uint64
	for b.Loop() {
		sink += z.Sample(rng)
	}
	_ = sink
}

func BenchmarkScramble(b *testing.B) {
	s, err := NewScrambler(100_000_000, 1)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	x := uint64(0)
	for b.Loop() {
		x = s.Permute(x)
	}
	_ = x
}

func BenchmarkAppendKey(b *testing.B) {
	buf := make([]byte, 0, 32)
	b.ReportAllocs()
	id := uint64(0)
	for b.Loop() {
		buf = AppendKey(buf[:0], id)
		id++
	}
}
