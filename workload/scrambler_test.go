package workload

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestNewScramblerRejectsZero(t *testing.T) {
	if _, err := NewScrambler(0, 1); !errors.Is(err, errInvalidParameter) {
		t.Errorf("NewScrambler(0, 1) error = %v, want errInvalidParameter", err)
	}
}

func TestScramblerIsBijection(t *testing.T) {
	for _, n := range []uint64{1, 2, 3, 4, 5, 7, 8, 1000, 1024, 65536, 65537} {
		for _, seed := range []uint64{0, 1, 0xdeadbeef} {
			s, err := NewScrambler(n, seed)
			if err != nil {
				t.Fatal(err)
			}
			seen := make([]bool, n)
			for r := range n {
				id := s.Permute(r)
				if id >= n {
					t.Fatalf("n=%d seed=%d: Permute(%d) = %d out of range", n, seed, r, id)
				}
				if seen[id] {
					t.Fatalf("n=%d seed=%d: Permute(%d) = %d is a repeated image", n, seed, r, id)
				}
				seen[id] = true
				if back := s.Invert(id); back != r {
					t.Fatalf("n=%d seed=%d: Invert(Permute(%d)) = %d", n, seed, r, back)
				}
			}
		}
	}
}

func TestScramblerInvertLarge(t *testing.T) {
	const n = 100_000_000
	s, err := NewScrambler(n, 42)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(zipfSeed, 3))
	for range 100_000 {
		x := rng.Uint64N(n)
		if got := s.Invert(s.Permute(x)); got != x {
			t.Fatalf("Invert(Permute(%d)) = %d", x, got)
		}
		if got := s.Permute(s.Invert(x)); got != x {
			t.Fatalf("Permute(Invert(%d)) = %d", x, got)
		}
	}
	// The full 64-bit domain has no cycle walking and the widest halves.
	w, err := NewScrambler(1<<64-1, 42)
	if err != nil {
		t.Fatal(err)
	}
	for range 10_000 {
		x := rng.Uint64N(1<<64 - 1)
		if got := w.Invert(w.Permute(x)); got != x {
			t.Fatalf("n=2^64-1: Invert(Permute(%d)) = %d", x, got)
		}
	}
}

func TestScramblerSeedsDiffer(t *testing.T) {
	for _, n := range []uint64{1000, 100_000_000} {
		a, _ := NewScrambler(n, 1)
		b, _ := NewScrambler(n, 2)
		same := 0
		for r := range uint64(1000) {
			if a.Permute(r) == b.Permute(r) {
				same++
			}
		}
		if same > 10 { // about one expected for n = 1000
			t.Errorf("n=%d: seeds 1 and 2 agree on %d of the first 1000 ranks", n, same)
		}
	}
}

// TestScramblerSpreadsHotRanks checks that the ids of the 100 hottest ranks
// of a 10^8-key space are spread over the id space rather than clustered.
func TestScramblerSpreadsHotRanks(t *testing.T) {
	const n, top, deciles = 100_000_000, 100, 10
	for _, seed := range []uint64{0, 1, 7} {
		s, err := NewScrambler(n, seed)
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]uint64, top)
		var perDecile [deciles]int
		for r := range ids {
			ids[r] = s.Permute(uint64(r))
			perDecile[ids[r]*deciles/n]++
		}
		slices.Sort(ids)
		if spread := ids[top-1] - ids[0]; spread < n/2 {
			t.Errorf("seed %d: top-%d ids span only %d of %d", seed, top, spread, n)
		}
		for d, c := range perDecile {
			// Binomial(100, 0.1): P(count > 30) < 1e-8, P(count = 0) ≈ 3e-5.
			if c == 0 || c > 30 {
				t.Errorf("seed %d: decile %d holds %d of the top-%d ids", seed, d, c, top)
			}
		}
		nearby := 0
		for i := 1; i < top; i++ {
			if ids[i]-ids[i-1] < 1000 {
				nearby++
			}
		}
		if nearby > 2 { // expected ≈ C(100,2) * 2*1000/1e8 ≈ 0.1
			t.Errorf("seed %d: %d pairs of top-%d ids are within 1000 of each other", seed, nearby, top)
		}
	}
}

func TestScramblerPanicsOutOfRange(t *testing.T) {
	s, _ := NewScrambler(10, 1)
	for name, f := range map[string]func(){
		"Permute": func() { s.Permute(10) },
		"Invert":  func() { s.Invert(10) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s(10) on n=10 did not panic", name)
				}
			}()
			f()
		}()
	}
}

func TestScramblerDoesNotAllocate(t *testing.T) {
	s, _ := NewScrambler(100_000_000, 1)
	x := uint64(12345)
	if a := testing.AllocsPerRun(1000, func() { x = s.Permute(x) }); a != 0 {
		t.Errorf("Permute allocates %v times per call", a)
	}
}
