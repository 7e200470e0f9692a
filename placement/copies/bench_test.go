package copies

import (
	"fmt"
	"math"
	"testing"
)

// ringLayout spreads keys over an upper layer of n nodes and a lower one
// of n more by a hash of the key, with the next upper nodes as extras.
type ringLayout struct{ n int }

func (l ringLayout) Count() int { return 2 * l.n }

func (l ringLayout) Owners(key string, dst []int) []int {
	h := hashOf(key)
	return append(dst, int(h%uint64(l.n)), l.n+int((h>>32)%uint64(l.n)))
}

func (l ringLayout) Extra(key string, n int, dst []int) []int {
	first := int(hashOf(key) % uint64(l.n))
	for i := 1; i <= n && i < l.n; i++ {
		dst = append(dst, (first+i)%l.n)
	}
	return dst
}

func hashOf(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := range len(s) {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	return h
}

// BenchmarkDecide decides the copies of the paper's default setup: 6,400
// candidate keys (100 slots on each of 64 nodes) under Zipf-0.99 with 5 %
// writes, over 1,024 servers.
func BenchmarkDecide(b *testing.B) {
	const nodes, servers, keys = 32, 1024, 6400
	rates := make([]float64, keys)
	sum := 0.0
	for i := range rates {
		rates[i] = 1 / math.Pow(float64(i+1), 0.99)
		sum += rates[i]
	}
	ks := make([]Key, keys)
	for i := range ks {
		p := rates[i] / sum / 2
		ks[i] = Key{Name: fmt.Sprint("key", i), Reads: 0.95 * p, Writes: 0.05 * p, Server: i * 7919 % servers}
	}
	base := make([]float64, servers)
	for i := range base {
		base[i] = 0.5 / servers
	}
	m := Model{NodeCapacity: 32, ServerCapacity: 1, CoherenceCost: 1, NodeWriteCost: 2, MaxCopies: nodes + 1, Slots: 100}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decide(m, ks, base, ringLayout{nodes}); err != nil {
			b.Fatal(err)
		}
	}
}
