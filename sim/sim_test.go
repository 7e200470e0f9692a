package sim

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/distcache/distcache/placement/partmap"
)

type configOption func(*Config)

func withSkew(s float64) configOption       { return func(c *Config) { c.Skew = s } }
func withWrites(w float64) configOption     { return func(c *Config) { c.WriteRatio = w } }
func withTelemetryDelay(d int) configOption { return func(c *Config) { c.Routing.TelemetryDelay = d } }

// smallConfig is a scaled-down deployment (8 spines, 8 racks of 8 servers,
// 20 objects per cache node, one million keys) that keeps the paper's
// shape and runs in a second.
func smallConfig(opts ...configOption) Config {
	c := Default()
	c.Spines, c.Racks, c.ServersPerRack, c.CachePerNode = 8, 8, 8, 20
	c.Keys, c.ExactKeys = 1_000_000, 200_000
	c.Routing.Queries, c.Routing.Warmup = 300_000, 30_000
	c.Routing.Clients, c.Routing.LoadWindow, c.Routing.StaleAfter, c.Routing.HalfLife = 8, 4096, 16384, 16384
	c.Seed = 7
	for _, o := range opts {
		o(&c)
	}
	return c
}

func evaluate(t *testing.T, cfg Config) map[Strategy]Result {
	t.Helper()
	rs, err := Evaluate(cfg, Strategies)
	if err != nil {
		t.Fatal(err)
	}
	out := map[Strategy]Result{}
	for _, r := range rs {
		out[r.Strategy] = r
		t.Logf("%-12s %8.1f  limited by %s", r.Strategy, r.Throughput, r.Bottleneck)
	}
	return out
}

// TestReadOnlySkewedShape checks the shape of the paper's Figure 9a at
// Zipf-0.99: DistCache with adaptive copies matches the optimum of its
// placement and CacheReplication, and CachePartition and NoCache fall
// clearly behind plain DistCache.
func TestReadOnlySkewedShape(t *testing.T) {
	r := evaluate(t, smallConfig())
	thr := func(s Strategy) float64 { return r[s].Throughput }
	if thr(Adaptive) < 0.97*thr(Optimal) {
		t.Errorf("adaptive %.1f below 0.97 × optimal %.1f", thr(Adaptive), thr(Optimal))
	}
	if thr(Adaptive) > thr(Optimal)*(1+1e-9) {
		t.Errorf("adaptive %.1f above the optimum %.1f of its own placement", thr(Adaptive), thr(Optimal))
	}
	if thr(Adaptive) < thr(Replication) {
		t.Errorf("adaptive %.1f below replication %.1f", thr(Adaptive), thr(Replication))
	}
	if thr(Partition) > 0.8*thr(DistCache) || thr(NoCache) > thr(Partition) {
		t.Errorf("want nocache %.1f < partition %.1f < 0.8 × distcache %.1f", thr(NoCache), thr(Partition), thr(DistCache))
	}
}

// TestUniformAllEqual: without skew the servers are balanced and caching
// changes nothing (Figure 9a at x = 0).
func TestUniformAllEqual(t *testing.T) {
	r := evaluate(t, smallConfig(withSkew(0)))
	servers := float64(smallConfig().Servers())
	for s, res := range r {
		if math.Abs(res.Throughput-r[NoCache].Throughput) > 0.01*r[NoCache].Throughput {
			t.Errorf("%s %.1f differs from nocache %.1f under a uniform workload", s, res.Throughput, r[NoCache].Throughput)
		}
		if res.Throughput < 0.9*servers || !strings.HasPrefix(res.Bottleneck, "server") {
			t.Errorf("%s: %.1f limited by %s, want about %v servers' worth limited by a server", s, res.Throughput, res.Bottleneck, servers)
		}
	}
}

// TestPowerOfTwoChoicesMatters compares the router's split with sending each
// read to a uniformly random copy, on the same placement, and with a router
// whose telemetry arrives too late to be useful.
func TestPowerOfTwoChoicesMatters(t *testing.T) {
	// Zipf-1.2 makes the cache nodes, not the servers, the bottleneck.
	cfg := smallConfig(withSkew(1.2))
	m, err := newModel(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := m.placement(DistCache)
	p.splitEvenly()
	random, _ := m.limit(m.loads(p))
	routed := evaluate(t, cfg)[DistCache].Throughput
	stale := evaluate(t, smallConfig(withSkew(1.2), withTelemetryDelay(200_000)))[DistCache].Throughput
	t.Logf("random copy %.1f, routed %.1f, routed on stale telemetry %.1f", random, routed, stale)
	if routed < 1.1*random {
		t.Errorf("power-of-two routing %.1f not clearly above a random choice %.1f", routed, random)
	}
	if stale >= routed {
		t.Errorf("stale telemetry %.1f should do worse than fresh %.1f", stale, routed)
	}
}

// TestAdaptiveCopiesLiftTheHottestKeyLimit: with one copy per layer the
// hottest key caps throughput at twice a cache node's capacity over its
// probability; the adaptive strategy's extra copies of keys hotter than
// half a node lift the cap.
func TestAdaptiveCopiesLiftTheHottestKeyLimit(t *testing.T) {
	cfg := smallConfig(withSkew(1.2))
	m, err := newModel(cfg)
	if err != nil {
		t.Fatal(err)
	}
	limit := 2 * float64(cfg.ServersPerRack) / m.prob[0]
	r := evaluate(t, cfg)
	if plain := r[DistCache].Throughput; plain > limit*(1+1e-9) {
		t.Errorf("plain distcache %.1f exceeds the hottest-key limit %.1f", plain, limit)
	}
	if r[Adaptive].Throughput < 1.5*r[DistCache].Throughput {
		t.Errorf("adaptive %.1f not clearly above plain distcache %.1f", r[Adaptive].Throughput, r[DistCache].Throughput)
	}
}

// TestAdaptiveNeverBelowTheOthers: at every write ratio, DistCache with
// copies by cost and benefit does at least as well as no caching, as
// CachePartition and as CacheReplication (issue 20's simulator goal), and
// at least as well as plain DistCache once there are writes; also under
// Zipf-1.2, where the hottest key's server limits plain DistCache.
func TestAdaptiveNeverBelowTheOthers(t *testing.T) {
	type point struct {
		name string
		cfg  Config
	}
	var points []point
	for _, w := range []float64{0, 0.05, 0.1, 0.3, 0.5, 0.7, 1} {
		points = append(points, point{fmt.Sprintf("Zipf-0.99, %v writes", w), smallConfig(withWrites(w))})
	}
	points = append(points, point{"Zipf-1.2, 0.05 writes", smallConfig(withSkew(1.2), withWrites(0.05))})
	for _, pt := range points {
		r := evaluate(t, pt.cfg)
		others := []Strategy{NoCache, Partition, Replication}
		if pt.cfg.WriteRatio > 0 {
			others = append(others, DistCache)
		}
		for _, s := range others {
			if r[Adaptive].Throughput < r[s].Throughput*(1-1e-9) {
				t.Errorf("%s: adaptive %.1f below %s %.1f", pt.name, r[Adaptive].Throughput, s, r[s].Throughput)
			}
		}
	}
}

// TestWritesShape checks Figure 10: DistCache overtakes CacheReplication as
// soon as there are writes, degrades monotonically, and every caching
// strategy ends below NoCache when all queries are writes.
func TestWritesShape(t *testing.T) {
	prev := math.Inf(1)
	for _, w := range []float64{0.1, 0.3, 1} {
		r := evaluate(t, smallConfig(withWrites(w)))
		if r[DistCache].Throughput <= r[Replication].Throughput {
			t.Errorf("w=%v: distcache %.1f not above replication %.1f", w, r[DistCache].Throughput, r[Replication].Throughput)
		}
		if r[DistCache].Throughput >= prev {
			t.Errorf("w=%v: distcache %.1f did not degrade from %.1f", w, r[DistCache].Throughput, prev)
		}
		prev = r[DistCache].Throughput
		if w == 1 {
			for _, s := range []Strategy{Partition, Replication, DistCache} {
				if r[s].Throughput >= r[NoCache].Throughput {
					t.Errorf("all writes: %s %.1f not below nocache %.1f", s, r[s].Throughput, r[NoCache].Throughput)
				}
			}
		}
	}
}

// TestFailureTimeline checks Figure 11: each failure costs about the share
// of queries the failed node served until the controller remaps its
// partition, after which throughput is back to the offered rate.
func TestFailureTimeline(t *testing.T) {
	tl := FailureTimeline{Steps: 30, StepQueries: 1 << 14, Fail: []int{5, 8}, DetectAfter: 2, Restore: 20, Load: 0.5}
	rs, err := RunFailure(smallConfig(), tl, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := rs[4].Throughput
	for step, r := range rs {
		switch {
		case step < 5 || step >= 12:
			if math.Abs(r.Throughput-before) > 1e-9*before {
				t.Errorf("step %d: %.2f, want the offered %.2f with every partition served", step, r.Throughput, before)
			}
		case step == 5 || step == 6 || step == 8 || step == 9:
			if r.Throughput >= before {
				t.Errorf("step %d: %.2f, want a dip below %.2f while a failed node is not yet remapped", step, r.Throughput, before)
			}
			if dip := 1 - r.Throughput/before; dip > 2.0/8 {
				t.Errorf("step %d: dip %.3f larger than the failed nodes' 2/8 of the spine layer", step, dip)
			}
		}
	}
	if !strings.Contains(rs[len(rs)-1].Bottleneck, "0 spine nodes down") {
		t.Errorf("last step %q: failed nodes did not return", rs[len(rs)-1].Bottleneck)
	}
}

func TestDeterministic(t *testing.T) {
	a, b := evaluate(t, smallConfig()), evaluate(t, smallConfig())
	for s := range a {
		if a[s] != b[s] {
			t.Fatalf("%s: %v then %v with the same seed", s, a[s], b[s])
		}
	}
}

// TestGivenMapIsEvaluated checks that Config.Map replaces the map built
// from the seed: the same map gives the same throughputs, and a map with a
// spine member failed changes them.
func TestGivenMapIsEvaluated(t *testing.T) {
	base := smallConfig(withSkew(1.2)) // the cache nodes limit DistCache
	want := evaluate(t, base)
	same := base
	same.Map = mustBuild(base.spec())
	if got := evaluate(t, same); got[DistCache] != want[DistCache] || got[Adaptive] != want[Adaptive] || got[NoCache] != want[NoCache] {
		t.Fatalf("the seed's own map: %v, want %v", got, want)
	}
	failed := base
	m, _, err := mustBuild(base.spec()).WithState(mustBuild(base.spec()).Layers[0].Members[0].Name, partmap.Failed)
	if err != nil {
		t.Fatal(err)
	}
	failed.Map = m
	if got := evaluate(t, failed); got[DistCache] == want[DistCache] {
		t.Fatalf("a map with a failed spine gives the same DistCache throughput %v", got[DistCache])
	}
}

func mustBuild(s partmap.Spec) *partmap.Map {
	m, err := partmap.Build(s, nil)
	if err != nil {
		panic(err)
	}
	return m
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		opt  configOption
		want string
	}{
		{"no spines", func(c *Config) { c.Spines = 0 }, "at least one spine"},
		{"negative cache", func(c *Config) { c.CachePerNode = -1 }, "negative"},
		{"empty keys", func(c *Config) { c.Keys = 0 }, "empty key space"},
		{"write ratio", withWrites(1.5), "write ratio"},
		{"warmup", func(c *Config) { c.Routing.Warmup = c.Routing.Queries }, "warm-up"},
		{"clients", func(c *Config) { c.Routing.Clients = 0 }, "clients"},
		{"aging", func(c *Config) { c.Routing.HalfLife = 0 }, "half-life"},
		{"map without a bound leaf layer", func(c *Config) {
			m := mustBuild(c.spec())
			m.Layers = m.Layers[:1]
			c.Map = m
		}, "leaf layer bound"},
		{"map of other spines", func(c *Config) { c.Map = mustBuild(c.spec()); c.Spines++ }, "spine layer has"},
		{"map of other racks", func(c *Config) { c.Map = mustBuild(c.spec()); c.Racks++ }, "racks, not"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := smallConfig(tc.opt).Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
