package hotkey

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// zipf samples ranks in [0, n) with P(i) ∝ 1/(i+1)^s by inverse CDF.
type zipf struct {
	cdf []float64
	r   *rand.Rand
}

func newZipf(n int, s float64, seed uint64) *zipf {
	cdf := make([]float64, n)
	total := 0.0
	for i := range n {
		total += 1 / math.Pow(float64(i+1), s)
		cdf[i] = total
	}
	for i := range cdf {
		cdf[i] /= total
	}
	return &zipf{cdf: cdf, r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

func (z *zipf) next() int {
	i, _ := slices.BinarySearch(z.cdf, z.r.Float64())
	return min(i, len(z.cdf)-1)
}

func keyNames(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "key-" + strconv.Itoa(i)
	}
	return keys
}

// Small sizes keep Reset (which clears every counter atomically) cheap under
// the race detector; they are still exact for the few keys of most tests.
const (
	testWidth = 4096
	testBloom = 1 << 14
)

func mustDetector(t testing.TB, cfg Config) *Detector {
	t.Helper()
	d, err := NewDetector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestCountMinBound checks that the sketch never underestimates and that the
// overestimate is within e·N/w for at least 99% of the keys of a Zipf stream.
// (The Count-Min analysis guarantees 1 - e^-4 ≈ 98.2% per key with 4 rows;
// skewed streams do much better, which is what this test pins.)
func TestCountMinBound(t *testing.T) {
	const universe = 100_000
	keys := keyNames(universe)
	tests := []struct {
		width   int
		skew    float64
		samples int
		seed    uint64
	}{
		{width: 256, skew: 0.99, samples: 200_000, seed: 1},
		{width: 1024, skew: 0.99, samples: 200_000, seed: 2},
		{width: 1000, skew: 1.2, samples: 200_000, seed: 3}, // not a power of two
		{width: 4096, skew: 0.9, samples: 200_000, seed: 4},
		{width: 65536, skew: 0.99, samples: 200_000, seed: 5},
	}
	for _, tc := range tests {
		t.Run("w="+strconv.Itoa(tc.width), func(t *testing.T) {
			d := mustDetector(t, Config{SketchWidth: tc.width, Threshold: math.MaxUint32, Seed: tc.seed})
			z := newZipf(universe, tc.skew, tc.seed)
			truth := make([]uint32, universe)
			for range tc.samples {
				i := z.next()
				truth[i]++
				d.RecordMiss(keys[i])
			}
			bound := math.E * float64(tc.samples) / float64(tc.width)
			within, seen, seenWithin := 0, 0, 0
			for i, k := range keys {
				est := d.Estimate(k)
				if est < truth[i] {
					t.Fatalf("Estimate(%s) = %d < true count %d", k, est, truth[i])
				}
				ok := float64(est-truth[i]) <= bound
				if ok {
					within++
				}
				if truth[i] > 0 {
					seen++
					if ok {
						seenWithin++
					}
				}
			}
			t.Logf("within e·N/w = %.1f: %d/%d keys, %d/%d queried keys", bound, within, universe, seenWithin, seen)
			if frac := float64(within) / universe; frac < 0.99 {
				t.Errorf("%.4f of all keys within e·N/w = %.1f, want >= 0.99", frac, bound)
			}
			if frac := float64(seenWithin) / float64(seen); frac < 0.99 {
				t.Errorf("%.4f of %d queried keys within e·N/w = %.1f, want >= 0.99", frac, seen, bound)
			}
			if st := d.Stats(); st.Misses != uint64(tc.samples) || st.Reports != 0 {
				t.Errorf("Stats = %+v, want %d misses and no reports", st, tc.samples)
			}
		})
	}
}

func TestCountMinSaturates(t *testing.T) {
	d := mustDetector(t, Config{SketchWidth: 64, Threshold: math.MaxUint32})
	const key = "hot"
	for i := range d.sketch {
		d.sketch[i].Store(math.MaxUint32 - 1)
	}
	d.RecordMiss(key) // reaches MaxUint32 == Threshold: reported
	d.RecordMiss(key)
	d.RecordMiss(key)
	if got := d.Estimate(key); got != math.MaxUint32 {
		t.Fatalf("Estimate = %d, want saturated %d", got, uint32(math.MaxUint32))
	}
	for i := range d.sketch {
		if v := d.sketch[i].Load(); v < math.MaxUint32-1 {
			t.Fatalf("sketch[%d] = %d: a counter wrapped", i, v)
		}
	}
	if got := d.candidates(); len(got) != 1 || got[0] != (Candidate{Key: key, Count: math.MaxUint32}) {
		t.Fatalf("candidates = %v, want one report of %q", got, key)
	}
}

func TestResetClearsSketch(t *testing.T) {
	d := mustDetector(t, Config{SketchWidth: 128, BloomBits: testBloom})
	for range 10 {
		d.RecordMiss("a")
	}
	if got := d.Estimate("a"); got < 10 {
		t.Fatalf("Estimate = %d, want >= 10", got)
	}
	d.Reset()
	for i := range d.sketch {
		if v := d.sketch[i].Load(); v != 0 {
			t.Fatalf("sketch[%d] = %d after Reset", i, v)
		}
	}
	for i := range d.bloom {
		if v := d.bloom[i].Load(); v != 0 {
			t.Fatalf("bloom[%d] = %#x after Reset", i, v)
		}
	}
	if got := d.Stats().Intervals; got != 1 {
		t.Fatalf("Intervals = %d, want 1", got)
	}
}

// TestHashPositions checks the derived positions stay in range for sizes
// that are not powers of two and that different rows of one key do not
// systematically coincide.
func TestHashPositions(t *testing.T) {
	d := mustDetector(t, Config{SketchWidth: 1000, BloomBits: 1001})
	same := 0
	for _, k := range keyNames(10_000) {
		h1 := d.hash.String(k)
		h2 := step(h1)
		g := h1
		var pos [SketchRows]uint64
		for r := range SketchRows {
			pos[r] = d.sketchIndex(r, g) - uint64(r)*d.width
			if pos[r] >= d.width {
				t.Fatalf("row %d position %d out of range", r, pos[r])
			}
			g += h2
		}
		if pos[0] == pos[1] {
			same++
		}
		for a := range BloomArrays {
			w, m := d.bloomBit(a, g)
			if w < uint64(a)*d.bloomWords || w >= uint64(a+1)*d.bloomWords || m == 0 {
				t.Fatalf("bloom array %d word %d out of range", a, w)
			}
			if w == uint64(a+1)*d.bloomWords-1 && m >= 1<<(1001%64) {
				t.Fatalf("bloom array %d bit beyond BloomBits", a)
			}
			g += h2
		}
	}
	// Independent rows coincide with probability 1/1000: expect about 10.
	if same > 40 {
		t.Errorf("rows 0 and 1 coincide for %d of 10000 keys, want about 10", same)
	}
}

// TestHotCellRatio checks the sketch's fill as an interval ends: one key
// counted up to the threshold fills one counter per row, and an interval
// without records fills none.
func TestHotCellRatio(t *testing.T) {
	d := mustDetector(t, Config{SketchWidth: 64, Threshold: 3})
	if got := d.HotCellRatio(); got != 0 {
		t.Fatalf("before any interval: %v, want 0", got)
	}
	for range 3 {
		d.RecordMiss("hot")
	}
	d.RecordMiss("cold")
	d.Reset()
	if got, want := d.HotCellRatio(), 4.0/float64(len(d.sketch)); got != want {
		t.Fatalf("after an interval with one hot key: %v, want %v (one counter in each of 4 rows)", got, want)
	}
	d.Reset()
	if got := d.HotCellRatio(); got != 0 {
		t.Fatalf("after an empty interval: %v, want 0", got)
	}
}
