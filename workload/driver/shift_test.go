package driver

import (
	"context"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/distcache/distcache/placement/hashing"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/workload"
)

// TestKeyMapPermutations checks the two permutations: the base one is the
// simulator's (same seed, same hot keys), the shifted one is current only
// between shift and unshift, and their hottest keys differ.
func TestKeyMapPermutations(t *testing.T) {
	const n, seed, hot = 100_000, 7, 1000
	k, err := newKeyMap(n, seed, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	sim, err := workload.NewScrambler(n, hashing.Derive(seed, "scramble"))
	if err != nil {
		t.Fatal(err)
	}
	if k.baseSeed == k.shiftedSeed {
		t.Fatalf("both permutations have seed %d", k.baseSeed)
	}
	for _, step := range []struct {
		name    string
		do      func()
		shifted bool
	}{
		{"new", func() {}, false},
		{"shifted", k.shift, true},
		{"shifted twice", k.shift, true},
		{"unshifted", k.unshift, false},
	} {
		step.do()
		if k.isShifted.Load() != step.shifted {
			t.Fatalf("%s: shifted %v, want %v", step.name, k.isShifted.Load(), step.shifted)
		}
		for r := range uint64(hot) {
			want := sim.Permute(r)
			if step.shifted {
				want = k.shiftedID(r)
			}
			if got := k.id(r); got != want {
				t.Fatalf("%s: rank %d maps to %d, want %d", step.name, r, got, want)
			}
		}
	}
	baseHot := map[uint64]bool{}
	for r := range uint64(hot) {
		baseHot[k.baseID(r)] = true
	}
	common := 0
	for r := range uint64(hot) {
		if baseHot[k.shiftedID(r)] {
			common++
		}
	}
	// Independent permutations share hot²/n = 10 of their hottest keys
	// on average; the seeds are fixed, so this is deterministic.
	if k.baseID(0) == k.shiftedID(0) || common > hot/20 {
		t.Errorf("hottest keys %d and %d, %d of the %d hottest in common", k.baseID(0), k.shiftedID(0), common, hot)
	}
}

// TestShiftPoll drives a shift with a fake clock: it happens at the first
// poll at or after its time into the phase, once, and stop undoes it.
func TestShiftPoll(t *testing.T) {
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		after time.Duration
		polls []time.Duration // since start
		want  time.Duration   // when it shifted; -1: never
	}{
		{"before its time", 2 * time.Second, []time.Duration{0, time.Second, 2*time.Second - 1}, -1},
		{"at its time", 2 * time.Second, []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}, 2 * time.Second},
		{"first poll after its time", 2 * time.Second, []time.Duration{time.Second, 2500 * time.Millisecond, 4 * time.Second},
			2500 * time.Millisecond},
		{"no poll", time.Second, nil, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := newKeyMap(1000, 3, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			r := &runner{keys: k}
			var tl tally
			s := r.startShift(tt.after, start, &tl, nil)
			got := time.Duration(-1)
			for i, d := range tt.polls {
				tl.completed.Add(10)
				if s.poll(start.Add(d)) {
					if got >= 0 {
						t.Fatalf("shifted again at %v (first at %v)", d, got)
					}
					got = d
					if s.atShift.completed != 10*uint64(i+1) {
						t.Errorf("counters at the shift %+v, want %d completed", s.atShift, 10*(i+1))
					}
				}
				if shifted := got >= 0; k.isShifted.Load() != shifted || (k.id(0) == k.shiftedID(0)) != shifted {
					t.Fatalf("after the poll at %v: key map shifted %v, want %v", d, k.isShifted.Load(), shifted)
				}
			}
			if got != tt.want || s.shifted != (tt.want >= 0) {
				t.Fatalf("shifted at %v (%v), want %v", got, s.shifted, tt.want)
			}
			s.stop()
			if k.isShifted.Load() {
				t.Error("still shifted after stop")
			}
		})
	}
	var none *shiftRun // a phase without a shift
	if none.poll(start) {
		t.Error("a nil shift shifted")
	}
	none.stop()
}

// TestShiftResult summarises a shift from its counters.
func TestShiftResult(t *testing.T) {
	k, err := newKeyMap(100, 1, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	m := &partmap.Map{Layers: []partmap.Layer{{Name: "spine"}, {Name: "leaf"}}}
	s := &shiftRun{keys: k, start: start, after: 2 * time.Second}
	if res := s.result(start, start.Add(5*time.Second), tallyTotals{}, m, time.Second); res.Shifted || res.At != 0 ||
		res.ConfiguredAt != 2 || res.Seed != k.shiftedSeed {
		t.Errorf("not shifted: %+v", res)
	}
	s.shifted, s.at = true, start.Add(2*time.Second)
	s.atShift = tallyTotals{completed: 210, errors: 10}
	s.st0 = clientTotals{gets: 100, hits: 50, layerHits: []uint64{30, 20}}
	s.stAt = clientTotals{gets: 300, hits: 210, layerHits: []uint64{120, 90}}
	s.st1 = clientTotals{gets: 600, hits: 270, layerHits: []uint64{150, 120}}
	res := s.result(start, start.Add(5*time.Second), tallyTotals{completed: 500, errors: 10}, m, time.Second)
	want := ShiftResult{ConfiguredAt: 2, Shifted: true, At: 2, Seed: k.shiftedSeed, Interval: 1, Before: 100, After: 290.0 / 3,
		HitRatioBefore: map[string]float64{"all": 0.8, "spine": 0.45, "leaf": 0.35},
		HitRatioAfter:  map[string]float64{"all": 0.2, "spine": 0.1, "leaf": 0.1}}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if res.ConfiguredAt != want.ConfiguredAt || !res.Shifted || res.At != want.At || res.Seed != want.Seed ||
		res.Interval != want.Interval || !near(res.Before, want.Before) || !near(res.After, want.After) {
		t.Fatalf("result %+v, want %+v", res, want)
	}
	for name, ratios := range map[string][2]map[string]float64{
		"before": {res.HitRatioBefore, want.HitRatioBefore}, "after": {res.HitRatioAfter, want.HitRatioAfter}} {
		if len(ratios[0]) != len(ratios[1]) {
			t.Errorf("hit ratios %s %v, want %v", name, ratios[0], ratios[1])
		}
		for l, v := range ratios[1] {
			if !near(ratios[0][l], v) {
				t.Errorf("hit ratios %s %v, want %v", name, ratios[0], ratios[1])
			}
		}
	}
}

// TestDispatchMapsByCurrentPermutation runs the dispatcher with a shift
// that is due from the start and one that never is: the hottest key
// issued is the hottest rank's key of the shifted, or of the base,
// permutation. The operation stream is seeded, so this is deterministic.
func TestDispatchMapsByCurrentPermutation(t *testing.T) {
	cfg := Config{MapFile: "m", Keys: 1000, Seed: 5, Logger: slog.New(slog.DiscardHandler)}.WithDefaults()
	for _, due := range []bool{false, true} {
		k, err := newKeyMap(cfg.Keys, cfg.Seed, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		z, err := workload.NewZipf(cfg.Keys, cfg.Skew)
		if err != nil {
			t.Fatal(err)
		}
		r := &runner{cfg: cfg, log: cfg.Logger, keys: k, zipf: z}
		start := time.Now()
		var tl tally
		// The shift's clock starts an hour before the phase: due at once,
		// or an hour after the phase's (never) deadline.
		shiftStart, after := start.Add(-time.Hour), time.Minute
		if !due {
			shiftStart, after = start, time.Hour
		}
		s := r.startShift(after, shiftStart, &tl, nil)
		ops := make(chan op)
		counts := map[uint64]int{}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for o := range ops {
				counts[o.id]++
			}
		}()
		ph := phase{name: "measure", mode: DistCache, rate: math.MaxFloat64, duration: time.Hour, count: 5000}
		issued, _ := r.dispatch(context.Background(), ph, start, ops, s)
		close(ops)
		<-done
		if issued != ph.count || s.shifted != due {
			t.Fatalf("due %v: issued %d of %d, shifted %v", due, issued, ph.count, s.shifted)
		}
		var hottest uint64
		for id, c := range counts {
			if c > counts[hottest] {
				hottest = id
			}
		}
		want := k.baseID(0)
		if due {
			want = k.shiftedID(0)
		}
		if hottest != want {
			t.Errorf("due %v: hottest key issued %d (%d times), want %d (%d times)", due, hottest, counts[hottest], want, counts[want])
		}
		s.stop()
	}
}

// TestHotRacksFirst: with the hot set on the first racks, both
// permutations give the lowest ranks to exactly the keys stored there, in
// the scrambler's order, and stay bijections; a hot set on every rack is
// refused.
func TestHotRacksFirst(t *testing.T) {
	const n, seed, hotRacks = 5000, 9, 2
	m, err := partmap.Build(partmap.Spec{Cluster: "t", Racks: 8, ShardsPerRack: 2, StorageSeed: 4,
		Layers: []partmap.LayerSpec{{Name: "spine", Nodes: 2, Seed: 1, VirtualNodes: 16}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := partmap.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	k, err := newKeyMap(n, seed, p, hotRacks)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := newKeyMap(n, seed, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	inHotRacks := func(id uint64) bool { rack, _ := p.Shard(workload.Key(id)); return rack < hotRacks }
	for _, perm := range []struct {
		name      string
		got, from func(uint64) uint64
	}{{"base", k.baseID, plain.baseID}, {"shifted", k.shiftedID, plain.shiftedID}} {
		var want []uint64 // the scrambler's order, hot racks' keys first
		for _, hot := range []bool{true, false} {
			for r := range uint64(n) {
				if id := perm.from(r); inHotRacks(id) == hot {
					want = append(want, id)
				}
			}
		}
		hot := 0
		for r := range uint64(n) {
			if got := perm.got(r); got != want[r] {
				t.Fatalf("%s: rank %d maps to %d, want %d", perm.name, r, got, want[r])
			}
			if inHotRacks(want[r]) {
				hot++
			}
		}
		// 2 racks of 8: about a quarter of the keys, and every one of
		// them ranked before every other key.
		if hot < n/8 || hot > n/2 || !inHotRacks(perm.got(uint64(hot-1))) || inHotRacks(perm.got(uint64(hot))) {
			t.Errorf("%s: %d keys in the hot racks, not all ranked first", perm.name, hot)
		}
	}
	if _, err := newKeyMap(n, seed, p, 8); err == nil {
		t.Error("a hot set on all 8 racks accepted")
	}
}
