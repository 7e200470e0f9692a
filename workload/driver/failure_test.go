package driver

import (
	"cmp"
	"context"
	"errors"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/dataplane/mapwatch"
	"github.com/distcache/distcache/placement/partmap"
)

// fakeCluster records the driver's calls and reports growing work; it
// fails and recovers nothing. injectErr is the error of Kill, Pause and
// Slow, recoverErr that of Restart, Resume and Unslow.
type fakeCluster struct {
	mu         sync.Mutex // guards calls and units
	calls      []string
	units      uint64
	injectErr  error
	recoverErr error
}

func (f *fakeCluster) record(call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
}

func (f *fakeCluster) Work(context.Context) ([]Work, error) {
	f.record("work")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.units += 100
	return []Work{
		{Name: "fake-spine-0", Node: true, Layer: "spine", Units: f.units / 2},
		{Name: "fake-rack-0-0", Units: f.units, Coherence: f.units / 10},
	}, nil
}

func (f *fakeCluster) Kill(_ context.Context, member string) error {
	f.record("kill " + member)
	return f.injectErr
}

func (f *fakeCluster) Restart(_ context.Context, member string) error {
	f.record("restart " + member)
	return f.recoverErr
}

func (f *fakeCluster) Pause(_ context.Context, member string) error {
	f.record("pause " + member)
	return f.injectErr
}

func (f *fakeCluster) Resume(_ context.Context, member string) error {
	f.record("resume " + member)
	return f.recoverErr
}

func (f *fakeCluster) Slow(_ context.Context, member string, delay time.Duration) error {
	f.record("slow " + member + " " + delay.String())
	return f.injectErr
}

func (f *fakeCluster) Unslow(_ context.Context, member string) error {
	f.record("unslow " + member)
	return f.recoverErr
}

// blackHoleMap writes a map whose one node and one shard are a UDP socket
// that never answers, and returns the file.
func blackHoleMap(t *testing.T) string {
	t.Helper()
	var lc net.ListenConfig
	hole, err := lc.ListenPacket(t.Context(), "udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hole.Close() })
	m, err := partmap.Build(partmap.Spec{Cluster: "fake", Racks: 1, ShardsPerRack: 1,
		Layers: []partmap.LayerSpec{{Name: "spine", Nodes: 1}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m.Layers[0].Members[0].Address = hole.LocalAddr().String()
	m.Storage.Racks[0].Shards[0].Address = hole.LocalAddr().String()
	path := filepath.Join(t.TempDir(), "map.json")
	if err := mapwatch.WriteFile(path, m); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFailureOrder checks, on a fake cluster, that the failure path reads
// the work, fails the member, then recovers it: after DownFor, or at the
// window's end, or not at all if the window ends before the failure; that
// a failed injection or recovery fails the run; and that every mode calls
// its own pair of Cluster methods and is reported as such.
func TestFailureOrder(t *testing.T) {
	const m = "fake-spine-0"
	modes := []struct {
		mode             FailureMode
		delay            time.Duration
		inject, recovery string // the calls
	}{
		{"", 0, "kill " + m, "restart " + m}, // FailKill by default
		{FailPause, 0, "pause " + m, "resume " + m},
		{FailSlow, 100 * time.Millisecond, "slow " + m + " 100ms", "unslow " + m},
	}
	type calls func(inject, recovery string) []string
	tests := []struct {
		name          string
		at, downFor   time.Duration
		injectErr     error
		recoverErr    error
		wantCalls     calls
		wantErr       bool
		wantRecovered bool
	}{
		{name: "recovery after the down time", at: 100 * time.Millisecond, downFor: 200 * time.Millisecond,
			wantCalls: func(i, r string) []string { return []string{"work", "work", "work", i, r, "work"} }, wantRecovered: true},
		{name: "recovery at the window's end", at: 100 * time.Millisecond, downFor: time.Hour,
			wantCalls: func(i, r string) []string { return []string{"work", "work", "work", i, "work", r} }, wantRecovered: true},
		{name: "window ends before the failure", at: time.Hour, downFor: time.Second,
			wantCalls: func(string, string) []string { return []string{"work", "work", "work"} }},
		{name: "injection fails", at: 100 * time.Millisecond, downFor: time.Second, injectErr: errors.New("no such process"),
			wantCalls: func(i, _ string) []string { return []string{"work", "work", "work", i} }, wantErr: true},
		{name: "recovery fails, retried once as the run ends", at: 100 * time.Millisecond, downFor: 100 * time.Millisecond,
			recoverErr: errors.New("cannot exec"),
			wantCalls:  func(i, r string) []string { return []string{"work", "work", "work", i, r, r} }, wantErr: true},
	}
	for _, md := range modes {
		name := cmp.Or(string(md.mode), "default")
		for _, tt := range tests {
			t.Run(name+"/"+tt.name, func(t *testing.T) {
				fake := &fakeCluster{injectErr: tt.injectErr, recoverErr: tt.recoverErr}
				cfg := Config{
					MapFile: blackHoleMap(t), Keys: 100, Modes: []Mode{DistCache}, Rate: 100,
					Duration: 600 * time.Millisecond, Concurrency: 4, Clients: 1, Preload: -1, Warmup: -1,
					OpTimeout: 50 * time.Millisecond, Client: client.Config{AttemptTimeout: 20 * time.Millisecond},
					Failure: &Failure{Member: m, Mode: md.mode, Delay: md.delay, At: tt.at, DownFor: tt.downFor},
				}
				rep, err := Run(testContext(t), cfg, fake)
				if (err != nil) != tt.wantErr {
					t.Fatalf("Run: error %v, want error %v", err, tt.wantErr)
				}
				fake.mu.Lock()
				calls := slices.Clone(fake.calls)
				fake.mu.Unlock()
				wantCalls := tt.wantCalls(md.inject, md.recovery)
				if !slices.Equal(calls, wantCalls) {
					t.Fatalf("calls %q, want %q", calls, wantCalls)
				}
				if err != nil {
					return
				}
				f := rep.Failure
				wantInjected := slices.Contains(wantCalls, md.inject)
				if f == nil || f.Killed != wantInjected || f.Restarted != tt.wantRecovered ||
					(f.Restarted && f.KilledAt >= f.RestartedAt) {
					t.Fatalf("failure %+v, want failed %v, recovered %v, in that order", f, wantInjected, tt.wantRecovered)
				}
				wantMode := md.mode
				if wantMode == "" {
					wantMode = FailKill
				}
				if f.Mode != wantMode || f.DelaySeconds != md.delay.Seconds() {
					t.Fatalf("failure mode %q, delay %vs; want %q, %vs", f.Mode, f.DelaySeconds, wantMode, md.delay.Seconds())
				}
				// Every operation timed out: nothing was answered, so there is
				// no throughput to normalise.
				if mr := rep.Modes[0]; mr.Errors != mr.Ops || mr.AchievedRate != 0 || mr.NormalizedThroughput != 0 {
					t.Errorf("%d errors in %d ops, achieved %v, normalized %v; want only errors and no throughput",
						mr.Errors, mr.Ops, mr.AchievedRate, mr.NormalizedThroughput)
				}
			})
		}
	}
}

func TestFailureAnalyze(t *testing.T) {
	// dip is what analyze fills.
	type dip struct{ worst, at, ratio, recovered, mapChange float64 }
	bins := func(rates ...float64) []Point {
		var out []Point
		for i, r := range rates {
			out = append(out, Point{T: 0.25 * float64(i+1), OpsPerSecond: r})
		}
		return out
	}
	tests := []struct {
		name     string
		res      FailureResult
		timeline []Point
		want     dip
	}{
		{
			name: "a dip after the kill, recovered before the restart",
			res: FailureResult{Killed: true, KilledAt: 0.5, Restarted: true, RestartedAt: 2, Before: 100,
				MapVersions: []MapVersion{{Version: 2, At: 1.5}}},
			// bins end at 0.25 … 2.5; 0.75 is the first that starts after the kill
			timeline: bins(100, 100, 95, 40, 20, 70, 95, 100, 10, 100),
			want:     dip{worst: 20, at: 1.25, ratio: 0.2, recovered: 1, mapChange: 1},
		},
		{
			name:     "no dip, no map change",
			res:      FailureResult{Killed: true, KilledAt: 0.5, Before: 100},
			timeline: bins(100, 100, 95, 98, 96),
			want:     dip{worst: 95, at: 0.75, ratio: 0.95},
		},
		{
			name:     "not killed",
			res:      FailureResult{Before: 100},
			timeline: bins(100, 10),
			want:     dip{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := tc.res
			res.analyze(tc.timeline, 250*time.Millisecond)
			got := dip{res.Worst, res.WorstAt, res.WorstRatio, res.RecoveredAfter, res.MapChangeAfter}
			if got != tc.want {
				t.Fatalf("analysed %+v, want %+v", got, tc.want)
			}
		})
	}
}
