package hotkey

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

func TestNewDetectorConfig(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string // substring; empty for success
	}{
		{name: "defaults", cfg: Config{}},
		{name: "small", cfg: Config{SketchWidth: 1, BloomBits: 1, MaxReports: 1, Threshold: 1}},
		{name: "max", cfg: Config{SketchWidth: 8, BloomBits: MaxSize, MaxReports: MaxSize}},
		{name: "negative width", cfg: Config{SketchWidth: -1}, wantErr: "sketch width -1"},
		{name: "huge width", cfg: Config{SketchWidth: MaxSize + 1}, wantErr: "sketch width"},
		{name: "negative bloom", cfg: Config{BloomBits: -5}, wantErr: "bloom bits -5"},
		{name: "huge bloom", cfg: Config{BloomBits: 1 << 40}, wantErr: "bloom bits"},
		{name: "negative reports", cfg: Config{MaxReports: -1}, wantErr: "max reports -1"},
		{name: "huge reports", cfg: Config{MaxReports: MaxSize + 1}, wantErr: "max reports"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := NewDetector(tc.cfg)
			if tc.wantErr == "" {
				if err != nil || d == nil {
					t.Fatalf("NewDetector(%+v) = %v, %v", tc.cfg, d, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("NewDetector(%+v) succeeded, want error", tc.cfg)
			}
			if !errors.Is(err, ErrInvalidConfig) ||
				!strings.HasPrefix(err.Error(), "cannot create hot-key detector: ") ||
				!strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %q, want ErrInvalidConfig mentioning %q", err, tc.wantErr)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	got := Config{Seed: 7}.withDefaults()
	want := Config{SketchWidth: DefaultSketchWidth, BloomBits: DefaultBloomBits,
		MaxReports: DefaultMaxReports, Seed: 7}
	if got != want {
		t.Fatalf("withDefaults = %+v, want %+v", got, want)
	}
}

func TestReportOncePerInterval(t *testing.T) {
	tests := []struct {
		threshold uint32
		misses    int
		want      []Candidate // reports after misses
	}{
		{threshold: 1, misses: 1, want: []Candidate{{"k", 1}}},
		{threshold: 1, misses: 50, want: []Candidate{{"k", 1}}},
		{threshold: 10, misses: 9, want: nil},
		{threshold: 10, misses: 10, want: []Candidate{{"k", 10}}},
		{threshold: 10, misses: 1000, want: []Candidate{{"k", 10}}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("t=%d/n=%d", tc.threshold, tc.misses), func(t *testing.T) {
			d := mustDetector(t, Config{SketchWidth: testWidth, BloomBits: testBloom, Threshold: tc.threshold, Seed: 42})
			for interval := range 3 {
				for range tc.misses {
					d.RecordMiss("k")
				}
				got := d.candidates()
				if fmt.Sprint(got) != fmt.Sprint(tc.want) {
					t.Fatalf("interval %d: candidates = %v, want %v", interval, got, tc.want)
				}
				st := d.Stats()
				wantReports := uint64(len(tc.want) * (interval + 1))
				if st.Reports != wantReports || st.Misses != uint64(tc.misses*(interval+1)) ||
					st.Intervals != uint64(interval) || st.DroppedReports != 0 {
					t.Fatalf("interval %d: Stats = %+v, want %d reports", interval, st, wantReports)
				}
				d.Reset()
			}
		})
	}
}

func TestReportCopiesKey(t *testing.T) {
	d := mustDetector(t, Config{Threshold: 1})
	buf := []byte("abc")
	d.RecordMiss(unsafe.String(&buf[0], len(buf))) // a key aliasing a reused buffer
	copy(buf, "xyz")
	if got := d.candidates(); len(got) != 1 || got[0].Key != "abc" {
		t.Fatalf("candidates = %v, want the key as it was when reported", got)
	}
	copy(buf, "trk")
	d.Track(unsafe.String(&buf[0], len(buf)))
	copy(buf, "zzz")
	d.RecordHit("trk")
	if got := countsOf(d); got["trk"] != 1 || len(got) != 1 {
		t.Fatalf("counts = %v, want trk:1", got)
	}
}

func TestMaxReports(t *testing.T) {
	tests := []struct {
		maxReports, keys, rounds int
		wantKept, wantDropped    int
	}{
		{maxReports: 3, keys: 2, rounds: 1, wantKept: 2, wantDropped: 0},
		{maxReports: 3, keys: 3, rounds: 1, wantKept: 3, wantDropped: 0},
		{maxReports: 3, keys: 10, rounds: 1, wantKept: 3, wantDropped: 7},
		// Dropped keys are added to the Bloom filter: they count once.
		{maxReports: 3, keys: 10, rounds: 5, wantKept: 3, wantDropped: 7},
		{maxReports: 1, keys: 100, rounds: 2, wantKept: 1, wantDropped: 99},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("max=%d/keys=%d/rounds=%d", tc.maxReports, tc.keys, tc.rounds), func(t *testing.T) {
			d := mustDetector(t, Config{SketchWidth: testWidth, BloomBits: testBloom, Threshold: 1, MaxReports: tc.maxReports, Seed: 3})
			keys := keyNames(tc.keys)
			for interval := 1; interval <= 2; interval++ {
				for range tc.rounds {
					for _, k := range keys {
						d.RecordMiss(k)
					}
				}
				got := d.candidates()
				if len(got) != tc.wantKept {
					t.Fatalf("kept %d candidates, want %d", len(got), tc.wantKept)
				}
				for i, c := range got {
					if c.Key != keys[i] {
						t.Fatalf("candidate %d = %v, want key %s (first reported first)", i, c, keys[i])
					}
				}
				st := d.Stats()
				if st.Reports != uint64(interval*tc.wantKept) || st.DroppedReports != uint64(interval*tc.wantDropped) {
					t.Fatalf("interval %d: Stats = %+v, want %d reports and %d dropped in total",
						interval, st, interval*tc.wantKept, interval*tc.wantDropped)
				}
				d.Reset()
			}
		})
	}
}

func TestTrackAndRecordHit(t *testing.T) {
	d := mustDetector(t, Config{SketchWidth: testWidth, BloomBits: testBloom})
	d.Track("a")
	d.Track("b")
	d.Track("a") // keeps the counter
	for range 3 {
		d.RecordHit("a")
	}
	d.RecordHit("b")
	d.RecordHit("untracked")
	want := map[string]uint64{"a": 3, "b": 1}
	if got := countsOf(d); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("counts = %v, want %v", got, want)
	}
	d.Track("a")
	d.Untrack("b")
	d.Untrack("never")
	d.RecordHit("b")
	if got, want := countsOf(d), map[string]uint64{"a": 3}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after Untrack: counts = %v, want %v", got, want)
	}
	d.Reset()
	if got, want := countsOf(d), map[string]uint64{"a": 0}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after Reset: counts = %v, want %v (tracked set kept)", got, want)
	}
	d.Track("b")
	d.RecordHit("b")
	if got, want := countsOf(d), map[string]uint64{"a": 0, "b": 1}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after re-Track: counts = %v, want %v", got, want)
	}
	if st := d.Stats(); st.Hits != 7 || st.Misses != 0 {
		t.Fatalf("Stats = %+v, want 7 hits", st)
	}
}

func countsOf(d *Detector) map[string]uint64 {
	m := map[string]uint64{}
	for _, tk := range d.trackedCounts() {
		m[tk.key] = tk.count
	}
	return m
}

func TestRecordAllocs(t *testing.T) {
	quiet := mustDetector(t, Config{Threshold: 1 << 30}) // never reports
	quiet.Track("cached")
	hot := mustDetector(t, Config{Threshold: 5})
	for range 10 {
		hot.RecordMiss("reported") // reported once; later misses take the Bloom fast path
	}
	tests := []struct {
		name string
		f    func()
	}{
		{"RecordMiss below threshold", func() { quiet.RecordMiss("cold") }},
		{"RecordMiss already reported", func() { hot.RecordMiss("reported") }},
		{"RecordHit tracked", func() { quiet.RecordHit("cached") }},
		{"RecordHit untracked", func() { quiet.RecordHit("other") }},
		{"Estimate", func() { hot.Estimate("reported") }},
	}
	for _, tc := range tests {
		if n := testing.AllocsPerRun(1000, tc.f); n != 0 {
			t.Errorf("%s: %v allocs per run, want 0", tc.name, n)
		}
	}
	if got := countsOf(quiet)["cached"]; got != 1001 {
		t.Errorf("hits of cached = %d, want 1001", got)
	}
	if got := hot.Stats().Reports; got != 1 {
		t.Errorf("Reports = %d, want 1", got)
	}
}

// TestConcurrentRecords runs records from several goroutines and checks the
// totals; run with -race.
func TestConcurrentRecords(t *testing.T) {
	const (
		workers   = 8
		perWorker = 64 * 80 // every worker queries each key 80 times
		threshold = 100
	)
	d := mustDetector(t, Config{SketchWidth: testWidth, BloomBits: testBloom, Threshold: threshold, Seed: 11})
	keys := keyNames(64)
	for _, k := range keys[:16] {
		d.Track(k)
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				k := keys[(i*7+w)%len(keys)]
				d.RecordMiss(k)
				d.RecordHit(k)
			}
		})
	}
	wg.Wait()

	st := d.Stats()
	if st.Misses != workers*perWorker || st.Hits != workers*perWorker {
		t.Fatalf("Stats = %+v, want %d misses and hits", st, workers*perWorker)
	}
	// Every key is queried workers*perWorker/len(keys) = 640 times: each is
	// hot and must be reported exactly once.
	got := d.candidates()
	seen := map[string]bool{}
	for _, c := range got {
		if seen[c.Key] {
			t.Fatalf("key %s reported twice: %v", c.Key, got)
		}
		seen[c.Key] = true
		if c.Count < threshold {
			t.Errorf("candidate %v below threshold", c)
		}
	}
	if len(got) != len(keys) || st.Reports != uint64(len(keys)) {
		t.Fatalf("%d candidates, %d reports; want %d", len(got), st.Reports, len(keys))
	}
	var tracked uint64
	for _, tk := range d.trackedCounts() {
		tracked += tk.count
		if want := uint64(workers * perWorker / len(keys)); tk.count != want {
			t.Errorf("hits of %s = %d, want %d", tk.key, tk.count, want)
		}
	}
	if want := uint64(16 * workers * perWorker / len(keys)); tracked != want {
		t.Fatalf("tracked hits = %d, want %d", tracked, want)
	}
}

// TestConcurrentControl mixes the record paths with Track, Untrack, Plan,
// Reset and Stats for the race detector; only monotone totals are checked.
func TestConcurrentControl(t *testing.T) {
	const (
		workers   = 4
		perWorker = 3000
	)
	d := mustDetector(t, Config{Threshold: 3, SketchWidth: 1024, BloomBits: testBloom, MaxReports: 16})
	keys := keyNames(200)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				k := keys[(i*13+w*31)%len(keys)]
				d.RecordMiss(k)
				d.RecordHit(k)
				_ = d.Estimate(k)
			}
		})
	}
	wg.Go(func() {
		for i := range 50 {
			dec := d.Plan(8)
			for _, k := range dec.Evict {
				d.Untrack(k)
			}
			for _, k := range dec.Insert {
				d.Track(k)
			}
			if i%10 == 0 {
				d.Reset()
			}
			_ = d.Stats()
		}
	})
	wg.Wait()
	st := d.Stats()
	if st.Misses != workers*perWorker || st.Hits != workers*perWorker || st.Intervals != 55 {
		t.Fatalf("Stats = %+v", st)
	}
	if n := len(d.trackedCounts()); n > 8 {
		t.Fatalf("%d keys tracked, want <= capacity 8", n)
	}
}

// An interval without a miss skips clearing the sketch: the intervals
// after it still start from zero, and the hot-cell ratio of the idle one
// is 0.
func TestIdleIntervalKeepsResetsExact(t *testing.T) {
	d := mustDetector(t, Config{SketchWidth: testWidth, BloomBits: testBloom, Threshold: 10, Seed: 42})
	for interval, misses := range []int{10, 0, 0, 9, 10} {
		for range misses {
			d.RecordMiss("k")
		}
		var want []Candidate
		if misses >= 10 {
			want = []Candidate{{"k", 10}}
		}
		if got := d.candidates(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("interval %d (%d misses): candidates = %v, want %v", interval, misses, got, want)
		}
		d.Reset()
		if misses == 0 && d.HotCellRatio() != 0 {
			t.Fatalf("interval %d: hot-cell ratio %g after an idle interval", interval, d.HotCellRatio())
		}
	}
}
