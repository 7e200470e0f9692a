package hotkey

import (
	"math/rand/v2"
	"testing"

	"github.com/distcache/distcache/workload"
)

func TestNextThreshold(t *testing.T) {
	const width, maxReports = 65536, 1024
	tests := []struct {
		name string
		t    uint32
		in   Stats
		want uint32
	}{
		{"dropped reports double it", 8, Stats{Misses: 5000, Reports: 1024, DroppedReports: 1}, 16},
		{"few reports halve it", 64, Stats{Misses: 5000, Reports: 255}, 32},
		{"a full enough list keeps it", 64, Stats{Misses: 5000, Reports: 256}, 64},
		{"never below the minimum", MinThreshold, Stats{Misses: 10}, MinThreshold},
		{"an idle interval goes to the minimum", 3, Stats{}, MinThreshold},
		// e·N/w = 2.718·1e6/65536 = 41.5: the sketch's overestimate bound.
		{"never below the sketch's noise floor", 16, Stats{Misses: 1_000_000, Reports: 10}, 42},
		{"never above the maximum", MaxThreshold, Stats{Misses: 1, DroppedReports: 5}, MaxThreshold},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := nextThreshold(tc.t, tc.in, width, maxReports); got != tc.want {
				t.Fatalf("nextThreshold(%d, %+v) = %d, want %d", tc.t, tc.in, got, tc.want)
			}
		})
	}
}

// zipfIntervals records perInterval misses of a Zipf-0.99 workload over
// 10,000 keys in each of intervals intervals, planning after each, and
// returns the last interval's decision and the threshold it ended with.
func zipfIntervals(t *testing.T, d *Detector, perInterval, intervals int) (Decision, uint32) {
	t.Helper()
	z, err := workload.NewZipf(10_000, 0.99)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	var dec Decision
	for range intervals {
		for range perInterval {
			d.RecordMiss(workload.Key(z.Sample(r)))
		}
		dec = d.Plan(1 << 20)
	}
	return dec, d.Stats().Threshold
}

// At a node's share of 1,000 reads a second, no key reaches a fixed
// threshold of 128, while the adaptive one reports the hottest keys.
func TestAdaptiveThresholdReportsHotKeysOfALightLoad(t *testing.T) {
	fixed := mustDetector(t, Config{Threshold: 128})
	if dec, _ := zipfIntervals(t, fixed, 250, 3); len(dec.Insert) != 0 {
		t.Fatalf("threshold 128 inserted %d keys at 250 misses an interval, want none (the test's premise)", len(dec.Insert))
	}
	d := mustDetector(t, Config{})
	dec, threshold := zipfIntervals(t, d, 250, 3)
	if threshold != MinThreshold {
		t.Fatalf("threshold = %d, want %d at a light load", threshold, MinThreshold)
	}
	if len(dec.Insert) == 0 || dec.Insert[0] != workload.Key(0) {
		t.Fatalf("insert = %v, want the hottest key first", dec.Insert)
	}
}

// At a heavy load the threshold rises until an interval's reports fit the
// report list, so the list holds the hottest keys, not the first to cross.
func TestAdaptiveThresholdRisesUntilReportsFit(t *testing.T) {
	d := mustDetector(t, Config{MaxReports: 64})
	_, threshold := zipfIntervals(t, d, 20_000, 12)
	before := d.Stats()
	dec, _ := zipfIntervals(t, d, 20_000, 1)
	after := d.Stats()
	if threshold <= MinThreshold {
		t.Fatalf("threshold = %d after 12 heavy intervals, want it raised", threshold)
	}
	if dropped := after.DroppedReports - before.DroppedReports; dropped != 0 {
		t.Fatalf("an interval at threshold %d dropped %d reports, want none", threshold, dropped)
	}
	if len(dec.Insert) == 0 || dec.Insert[0] != workload.Key(0) {
		t.Fatalf("insert = %v, want the hottest key first", dec.Insert)
	}
}
