package hashing_test

import (
	"hash/fnv"
	"testing"

	"github.com/distcache/distcache/internal/testing/stattest"
	"github.com/distcache/distcache/placement/hashing"
)

// TestLayersIndependent checks DistCache's central assumption (§3.1): the
// assignment of keys to nodes by two layers' hash functions is statistically
// independent. It tabulates the joint assignment of one million keys to
// 32 × 32 buckets and runs a chi-square test of independence.
func TestLayersIndependent(t *testing.T) {
	const keys, buckets = 1_000_000, 32
	tests := []struct {
		name       string
		seedA      uint64
		seedB      uint64
		wantIndep  bool
		seedsEqual bool
	}{
		{name: "distinct seeds", seedA: 1, seedB: 2, wantIndep: true},
		{name: "derived seeds", seedA: hashing.Derive(7, "spine"), seedB: hashing.Derive(7, "leaf"), wantIndep: true},
		{name: "same seed is fully dependent", seedA: 3, seedB: 3, wantIndep: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := hashing.New(tc.seedA), hashing.New(tc.seedB)
			joint := make([]float64, buckets*buckets)
			rows := make([]float64, buckets)
			cols := make([]float64, buckets)
			for k := range uint64(keys) {
				i, j := a.Uint64(k)%buckets, b.Uint64(k)%buckets
				joint[i*buckets+j]++
				rows[i]++
				cols[j]++
			}
			expected := make([]float64, len(joint))
			for i := range buckets {
				for j := range buckets {
					expected[i*buckets+j] = rows[i] * cols[j] / keys
				}
			}
			x := stattest.ChiSquare(joint, expected)
			crit := stattest.ChiSquareCritical((buckets-1)*(buckets-1), 1e-4)
			if indep := x <= crit; indep != tc.wantIndep {
				t.Fatalf("chi-square %.1f vs critical %.1f: independent=%v, want %v", x, crit, indep, tc.wantIndep)
			}
		})
	}
}

func TestBytesMatchesString(t *testing.T) {
	f := hashing.New(42)
	for _, k := range []string{"", "a", "key:1", string(make([]byte, 600))} {
		if f.Bytes([]byte(k)) != f.String(k) {
			t.Errorf("Bytes(%q) != String(%q)", k, k)
		}
		if hashing.DigestOf([]byte(k)) != hashing.DigestOfString(k) {
			t.Errorf("DigestOf(%q) != DigestOfString(%q)", k, k)
		}
	}
}

func TestSeedsDiffer(t *testing.T) {
	if hashing.New(1).String("key:1") == hashing.New(2).String("key:1") {
		t.Fatal("different seeds gave the same hash")
	}
	if hashing.Derive(1, "a") == hashing.Derive(1, "b") {
		t.Fatal("different labels gave the same derived seed")
	}
}

func BenchmarkString(b *testing.B) {
	f := hashing.New(9)
	b.ReportAllocs()
	for b.Loop() {
		_ = f.String("key:123456789")
	}
}

func BenchmarkDigest(b *testing.B) {
	k := []byte("key:123456789")
	b.ReportAllocs()
	for b.Loop() {
		_ = hashing.DigestOf(k)
	}
}

// BenchmarkFNVBaseline is the standard library's FNV-1a on the same key, the
// baseline for BenchmarkString in docs/benchmarks.md.
func BenchmarkFNVBaseline(b *testing.B) {
	k := []byte("key:123456789")
	b.ReportAllocs()
	for b.Loop() {
		h := fnv.New64a()
		_, _ = h.Write(k)
		_ = h.Sum64()
	}
}
