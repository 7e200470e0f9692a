package main

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/distcache/distcache/standalone/control"
)

const ms = time.Millisecond

func write(key int, call, ret time.Duration, ok bool) op {
	return op{write: true, key: key, call: call, ret: ret, ok: ok}
}

func read(call, ret time.Duration, ok bool) op { return op{call: call, ret: ret, ok: ok} }

func TestRecovery(t *testing.T) {
	const fault = 1000 * ms
	for _, tc := range []struct {
		name string
		ops  []op
		keys int
		want time.Duration
		ok   bool
	}{
		{name: "no write", keys: 1},
		{name: "only before the fault", keys: 1, ops: []op{write(0, 900*ms, 1500*ms, true)}},
		{name: "not acknowledged", keys: 1, ops: []op{write(0, 1100*ms, 1500*ms, false)}},
		{name: "one key", keys: 1, ops: []op{write(0, 1100*ms, 1500*ms, true)}, want: 500 * ms, ok: true},
		{name: "the earliest acknowledgement of a key", keys: 1, ops: []op{
			write(0, 1100*ms, 1900*ms, true), write(0, 1200*ms, 1300*ms, true),
		}, want: 300 * ms, ok: true},
		{name: "called at the fault", keys: 1, ops: []op{write(0, fault, 1200*ms, true)}, want: 200 * ms, ok: true},
		{name: "the latest key", keys: 2, ops: []op{
			write(0, 1100*ms, 1200*ms, true), write(1, 1100*ms, 1700*ms, true),
		}, want: 700 * ms, ok: true},
		{name: "a key without", keys: 2, ops: []op{write(0, 1100*ms, 1200*ms, true)}},
		{name: "reads do not count", keys: 1, ops: []op{read(1100*ms, 1200*ms, true)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := recovery(tc.ops, tc.keys, fault)
			if got != tc.want || ok != tc.ok {
				t.Errorf("recovery = %v, %t; want %v, %t", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestFailedReads(t *testing.T) {
	ops := []op{read(0, 1, true), read(0, 1, false), write(0, 0, 1, false), read(0, 1, false)}
	if failed, reads := failedReads(ops); failed != 2 || reads != 3 {
		t.Errorf("failedReads = %d of %d, want 2 of 3", failed, reads)
	}
}

// every returns n operations completed at from, from+step, …
func every(from, step time.Duration, n int, ok bool) []op {
	var ops []op
	for i := range n {
		at := from + time.Duration(i)*step
		ops = append(ops, read(at, at, ok))
	}
	return ops
}

func TestWorstBin(t *testing.T) {
	const fault, before, bin = 1000 * ms, 1000 * ms, 250 * ms
	steady := every(0, 10*ms, 300, true) // 100/s from 0 to 3 s
	for _, tc := range []struct {
		name string
		ops  []op
		end  time.Duration
		want float64
	}{
		{name: "steady", ops: steady, end: 3000 * ms, want: 1},
		{name: "a bin at half the rate", end: 3000 * ms, want: 0.48, ops: append(append(every(0, 10*ms, 150, true),
			every(1500*ms, 20*ms, 12, true)...), every(1760*ms, 10*ms, 124, true)...)},
		{name: "an empty bin", end: 3000 * ms, want: 0, ops: append(every(0, 10*ms, 125, true), every(1500*ms, 10*ms, 150, true)...)},
		{name: "failed operations do not count", end: 2000 * ms, want: 0, ops: append(every(0, 10*ms, 100, true), every(1000*ms, 10*ms, 100, false)...)},
		{name: "the partial last bin is left out", end: 2100 * ms, want: 1, ops: every(0, 10*ms, 200, true)},
		{name: "nothing before", end: 3000 * ms, want: math.NaN(), ops: every(1000*ms, 10*ms, 100, true)},
		{name: "no whole bin", end: 1200 * ms, want: math.NaN(), ops: steady},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := worstBin(tc.ops, fault, tc.end, before, bin, anyOp)
			if math.IsNaN(tc.want) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-tc.want) > 1e-9) {
				t.Errorf("worstBin = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	s := func(d time.Duration) sample { return sample{d: d} }
	over := sample{d: 40 * time.Second, censored: true}
	ten := []sample{s(9), s(3), s(1), s(7), s(5), s(2), s(4), s(6), s(8), s(10)}
	for _, tc := range []struct {
		name    string
		samples []sample
		p       float64
		want    sample
		ok      bool
	}{
		{name: "none", p: 50},
		{name: "one", samples: []sample{s(7)}, p: 99, want: s(7), ok: true},
		{name: "median of ten", samples: ten, p: 50, want: s(5), ok: true},
		{name: "p99 of ten", samples: ten, p: 99, want: s(10), ok: true},
		{name: "max", samples: ten, p: 100, want: s(10), ok: true},
		{name: "censored sorts last", samples: []sample{over, s(50 * time.Second), s(1)}, p: 100, want: over, ok: true},
		{name: "median below the censored", samples: []sample{over, over, s(2), s(1)}, p: 50, want: s(2), ok: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := percentile(tc.samples, tc.p)
			if got != tc.want || ok != tc.ok {
				t.Errorf("percentile = %v, %t; want %v, %t", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestFractionPercentile(t *testing.T) {
	for _, tc := range []struct {
		name string
		xs   []float64
		p    float64
		want float64
	}{
		{name: "none", p: 50, want: math.NaN()},
		{name: "only undefined", xs: []float64{math.NaN()}, p: 50, want: math.NaN()},
		{name: "the lowest", xs: []float64{0.5, 0.2, math.NaN(), 0.9}, p: 0, want: 0.2},
		{name: "the median", xs: []float64{0.5, 0.2, math.NaN(), 0.9}, p: 50, want: 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fractionPercentile(tc.xs, tc.p)
			if math.IsNaN(tc.want) != math.IsNaN(got) || (!math.IsNaN(got) && got != tc.want) {
				t.Errorf("fractionPercentile = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMemberChanges(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	events := []control.Event{
		{Time: t0.Add(-time.Second), Member: "n-0", To: "Fenced"},
		{Time: t0, Member: "n-0", To: "Fenced"},
		{Time: t0.Add(time.Second), Member: "n-1", To: "Fenced"},
		{Time: t0.Add(2 * time.Second), Member: "n-0", To: "Failed"},
		{Time: t0.Add(5 * time.Second), Member: "n-0", To: "Active"},
	}
	for _, tc := range []struct{ victim, want string }{
		{"n-0", "Fenced → Failed → Active"},
		{"n-1", "Fenced"},
		{"n-2", "none"},
	} {
		if got := memberChanges(memberStates(events, tc.victim, t0)); got != tc.want {
			t.Errorf("memberChanges(%s) = %q, want %q", tc.victim, got, tc.want)
		}
	}
}

func TestRenderMode(t *testing.T) {
	o := options{maxWait: 40 * time.Second, pause: 5 * time.Second}
	m := modeResult{mode: mode{fault: "pause", controlPlane: "off"}, trials: []trialResult{
		{n: 0, victim: "n-0", unavailable: sample{d: 5010 * ms}, reads: 100, worst: 0.5, worstReads: 0.9, before: 360, changes: "none"},
		{n: 1, victim: "n-1", unavailable: sample{d: 40 * time.Second, censored: true}, failedReads: 2, reads: 100, worst: 0.25, worstReads: 0.8, changes: "none"},
		{n: 2, victim: "n-0", skipped: "not cached", reads: 10},
	}}
	var b strings.Builder
	report{o: o}.renderMode(&b, m)
	for _, want := range []string{
		"## pause, control plane off",
		"SIGSTOP of the victim's PID, SIGCONT 5s later",
		"| 2 (+1 skipped) | 5.01 s | > 40.00 s | > 40.00 s | 2 of 210 | 25 % / 25 % | 80 % / 80 % | no verdict |",
		"1 of 2 trials hit the bound",
		"| 1 | n-1 | 0.00 s | > 40.00 s | 2 of 100 | 0 | 25 % | 80 % | none | 0.00 s |",
		"| 2 | n-0 | | skipped: not cached | 0 of 10 |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, b.String())
		}
	}
}
