package driver

import (
	"context"
	"log/slog"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/workload"
)

// testConfig is a small run against c, bounded by Count (and a generous
// Duration). The nodes' caches are filled once, synchronously, after
// DistCache's warm-up.
func testConfig(t *testing.T, c *testCluster) Config {
	return Config{
		MapFile: c.mapFile, Keys: 200, Skew: 0.99, ValueSize: 32, WriteRatio: 0.1,
		Duration: 10 * time.Second, Count: 300, Concurrency: 8, Clients: 2,
		Preload: 50, Warmup: 300 * time.Millisecond, Interval: 50 * time.Millisecond,
		ProbeDuration: 300 * time.Millisecond, Seed: 7,
		Client: client.Config{AttemptTimeout: 500 * time.Millisecond},
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil)),
		hooks:  &hooks{afterWarmup: c.insertHot},
	}
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestRunModes runs short benchmarks on a real cluster and checks that the
// numbers are sane: NoCache never touches a cache node, DistCache is served
// partly from the caches, capacities are normalised, nothing is lost.
func TestRunModes(t *testing.T) {
	tests := []struct {
		name    string
		modes   []Mode
		rate    float64
		poisson bool
	}{
		{name: "nocache only", modes: []Mode{NoCache}},
		{name: "both, rate probed", modes: []Mode{DistCache, NoCache}},
		{name: "distcache, fixed rate, poisson arrivals", modes: []Mode{DistCache}, rate: 400, poisson: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newTestCluster(t)
			cfg := testConfig(t, c)
			cfg.Modes, cfg.Rate, cfg.Poisson = tt.modes, tt.rate, tt.poisson
			nodeGetsBeforeCheck := ^uint64(0)
			cfg.hooks.beforeCheck = func(context.Context, []string) { nodeGetsBeforeCheck = c.nodeGets() }
			var phases []string
			cfg.Progress = func(p Progress) {
				if ph := string(p.Mode) + "/" + p.Phase; !slices.Contains(phases, ph) {
					phases = append(phases, ph)
				}
			}
			rep, err := Run(testContext(t), cfg, c)
			if err != nil {
				t.Fatal(err)
			}
			var got []Mode
			for _, m := range rep.Modes {
				got = append(got, m.Mode)
			}
			want := []Mode{NoCache, DistCache}
			want = slices.DeleteFunc(want, func(m Mode) bool { return !slices.Contains(tt.modes, m) })
			if !slices.Equal(got, want) {
				t.Fatalf("modes %v, want %v", got, want)
			}
			if !rep.Config.Emulated || rep.Config.ServerCapacity != testShardRate {
				t.Errorf("config %+v: want emulated capacities of %d units/s per server", rep.Config, testShardRate)
			}
			for _, m := range rep.Modes {
				checkSane(t, m, tt.rate)
				switch m.Mode {
				case NoCache:
					for layer, h := range m.HitRatio {
						if h != 0 {
							t.Errorf("nocache: hit ratio %v in %s", h, layer)
						}
					}
					if u := nodeUnits(m); u != 0 {
						t.Errorf("nocache: the cache nodes did %d work units", u)
					}
				case DistCache:
					if m.HitRatio["all"] <= 0 || math.Abs(m.HitRatio["spine"]+m.HitRatio["leaf"]-m.HitRatio["all"]) > 1e-9 {
						t.Errorf("distcache: hit ratios %v, want hits adding up over the layers", m.HitRatio)
					}
					if nodeUnits(m) == 0 {
						t.Error("distcache: the cache nodes did no work")
					}
				}
			}
			if !slices.Contains(tt.modes, DistCache) && nodeGetsBeforeCheck != 0 {
				t.Errorf("nocache: the cache nodes got %d GETs", nodeGetsBeforeCheck)
			}
			if rep.LostWrites != 0 || rep.CheckedKeys == 0 {
				t.Errorf("%d lost writes in %d keys checked (%v), want 0 in > 0", rep.LostWrites, rep.CheckedKeys, rep.LostExamples)
			}
			if !slices.Contains(phases, "/preload") || !slices.Contains(phases, "/check") {
				t.Errorf("progress reported phases %v, want preload and check among them", phases)
			}
		})
	}
}

// checkSane checks what every measured mode must show.
func checkSane(t *testing.T, m ModeResult, rate float64) {
	t.Helper()
	wantSource := rateFromProbe
	if rate > 0 {
		wantSource = rateFromConfig
	}
	switch {
	case m.Ops == 0 || m.Ops != m.Reads+m.Writes || m.Writes == 0:
		t.Errorf("%s: %d ops = %d reads + %d writes", m.Mode, m.Ops, m.Reads, m.Writes)
	case m.AchievedRate <= 0 || m.OfferedRate <= 0 || m.Seconds <= 0:
		t.Errorf("%s: achieved %v, offered %v ops/s over %v s", m.Mode, m.AchievedRate, m.OfferedRate, m.Seconds)
	case m.NormalizedThroughput <= 0 || m.MaxUtilization <= 0 || m.Bottleneck == "":
		t.Errorf("%s: normalized throughput %v at u_max %v (%q)", m.Mode, m.NormalizedThroughput, m.MaxUtilization, m.Bottleneck)
	case len(m.Shards) != 2 || len(m.Nodes) != 4 || m.Imbalance < 1:
		t.Errorf("%s: %d shards, %d nodes, imbalance %v", m.Mode, len(m.Shards), len(m.Nodes), m.Imbalance)
	case m.P50Seconds <= 0 || m.P50Seconds > m.P99Seconds || m.P99Seconds > m.P999Seconds:
		t.Errorf("%s: latency quantiles %v, %v, %v", m.Mode, m.P50Seconds, m.P99Seconds, m.P999Seconds)
	case len(m.Timeline) == 0:
		t.Errorf("%s: empty timeline", m.Mode)
	case m.RateSource != wantSource || (m.Probe != nil) != (wantSource == rateFromProbe):
		t.Errorf("%s: rate from %s (probe %+v), want %s", m.Mode, m.RateSource, m.Probe, wantSource)
	case m.Coherence != 0 && m.Writes == 0:
		t.Errorf("%s: %d coherence operations without writes", m.Mode, m.Coherence)
	}
	if _, ok := m.HitRatio["all"]; !ok || len(m.HitRatio) != 3 {
		t.Errorf("%s: hit ratios %v, want spine, leaf and all", m.Mode, m.HitRatio)
	}
}

func nodeUnits(m ModeResult) uint64 {
	var u uint64
	for _, n := range m.Nodes {
		u += n.Units
	}
	return u
}

// TestLostWrites checks the read-back: nothing lost on a healthy cluster,
// and a value changed behind the driver's back in Redis is found.
func TestLostWrites(t *testing.T) {
	c := newTestCluster(t) // shared: each run checks only its own writes
	tests := []struct {
		name     string
		tamper   func(ctx context.Context, key string) error
		wantLost int
		wantGot  string
	}{
		{name: "healthy"},
		{name: "overwritten in storage", wantLost: 1, wantGot: "planted",
			tamper: func(ctx context.Context, key string) error {
				return c.redisOf(key).Set(ctx, key, "planted by the test", 0).Err()
			}},
		{name: "deleted from storage", wantLost: 1, wantGot: notFoundText,
			tamper: func(ctx context.Context, key string) error { return c.redisOf(key).Del(ctx, key).Err() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t, c)
			cfg.Modes, cfg.Rate, cfg.Count, cfg.WriteRatio = []Mode{NoCache}, 300, 100, 0.3
			var tampered string
			cfg.hooks.beforeCheck = func(ctx context.Context, keys []string) {
				if tt.tamper == nil {
					return
				}
				tampered = keys[len(keys)/2]
				if err := tt.tamper(ctx, tampered); err != nil {
					t.Error(err)
				}
			}
			rep, err := Run(testContext(t), cfg, c)
			if err != nil {
				t.Fatal(err)
			}
			if rep.LostWrites != tt.wantLost || rep.CheckedKeys == 0 {
				t.Fatalf("%d lost writes in %d keys checked (%+v), want %d", rep.LostWrites, rep.CheckedKeys, rep.LostExamples, tt.wantLost)
			}
			if tt.wantLost == 0 {
				return
			}
			ex := rep.LostExamples
			if len(ex) != 1 || ex[0].Key != tampered || !strings.Contains(ex[0].Got, tt.wantGot) || ex[0].Want == "" {
				t.Errorf("examples %+v, want key %s read as %q", ex, tampered, tt.wantGot)
			}
		})
	}
}

// TestRunWithFailure kills a spine node of the real cluster in DistCache's
// window and restarts it: the run completes, loses nothing, and the member
// is running again afterwards.
func TestRunWithFailure(t *testing.T) {
	c := newTestCluster(t)
	cfg := testConfig(t, c)
	member := c.spine()[0]
	cfg.Modes, cfg.Rate, cfg.Count, cfg.WriteRatio = []Mode{DistCache}, 200, 0, 0.2
	cfg.Duration = 1200 * time.Millisecond
	cfg.Failure = &Failure{Member: member, At: 200 * time.Millisecond, DownFor: 400 * time.Millisecond}
	rep, err := Run(testContext(t), cfg, c)
	if err != nil {
		t.Fatal(err)
	}
	f := rep.Failure
	if f == nil || f.Member != member || !f.Killed || !f.Restarted || f.KilledAt >= f.RestartedAt {
		t.Fatalf("failure %+v, want %s killed, then restarted", f, member)
	}
	if rep.LostWrites != 0 || rep.CheckedKeys == 0 {
		t.Errorf("%d lost writes in %d keys checked (%v)", rep.LostWrites, rep.CheckedKeys, rep.LostExamples)
	}
	if m := rep.Modes[0]; m.NormalizedThroughput <= 0 || m.Bottleneck == "" {
		t.Errorf("normalized throughput %v (%q) before the kill", m.NormalizedThroughput, m.Bottleneck)
	}
	running := c.Running(member)
	if !running {
		t.Errorf("%s is not running after the benchmark", member)
	}
}

// TestRunWithShift shifts the hot set in DistCache's window on the real
// cluster: the run reports the shift, the timeline has hit ratios, the
// hottest keys of both permutations were preloaded and nothing is lost.
func TestRunWithShift(t *testing.T) {
	c := newTestCluster(t)
	cfg := testConfig(t, c)
	cfg.Modes, cfg.Rate, cfg.Count = []Mode{DistCache}, 200, 0
	cfg.Duration, cfg.ShiftAt = 800*time.Millisecond, 300*time.Millisecond
	rep, err := Run(testContext(t), cfg, c)
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Shift
	if s == nil || !s.Shifted || s.At < s.ConfiguredAt || s.ConfiguredAt != 0.3 || rep.Config.ShiftAtSeconds != 0.3 ||
		s.HitRatioBefore == nil || s.HitRatioAfter == nil || s.Before <= 0 || s.After <= 0 {
		t.Fatalf("shift %+v (configured %v s), want one at 0.3 s or later", s, rep.Config.ShiftAtSeconds)
	}
	withRatio := 0
	for _, p := range rep.Modes[0].Timeline {
		if p.HitRatio != nil {
			withRatio++
		}
	}
	if withRatio == 0 {
		t.Errorf("no timeline point has a hit ratio: %+v", rep.Modes[0].Timeline)
	}
	if rep.LostWrites != 0 || rep.CheckedKeys == 0 || rep.PreloadErrors != 0 {
		t.Errorf("%d lost writes in %d keys checked (%v), %d preload errors", rep.LostWrites, rep.CheckedKeys,
			rep.LostExamples, rep.PreloadErrors)
	}
	k, err := newKeyMap(cfg.Keys, cfg.Seed, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t)
	for _, key := range []string{workload.Key(k.baseID(0)), workload.Key(k.shiftedID(0)), workload.Key(k.shiftedID(uint64(cfg.Preload - 1)))} {
		if n, err := c.redisOf(key).Exists(ctx, key).Result(); err != nil || n != 1 {
			t.Errorf("hot key %s not preloaded (exists %d, %v)", key, n, err)
		}
	}
}
