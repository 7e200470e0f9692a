package schedule

import (
	"reflect"
	"slices"
	"testing"
	"time"
)

var testCluster = Cluster{
	File:   "testdata/cluster.yaml",
	Nodes:  []string{"fault-spine-0", "fault-spine-1", "fault-spine-2", "fault-leaf-0", "fault-leaf-1"},
	Shards: []string{"fault-rack-0-0", "fault-rack-0-1", "fault-rack-1-0", "fault-rack-1-1"},
}

// config is the suite's usual configuration with opts applied.
func config(opts ...func(*Config)) Config {
	c := Config{
		Seed: 1, Clusters: []Cluster{testCluster}, Start: time.Second, HealBy: 10 * time.Second, Grace: time.Second,
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

func withSeed(s uint64) func(*Config)       { return func(c *Config) { c.Seed = s } }
func withClasses(cs ...Class) func(*Config) { return func(c *Config) { c.Classes = cs } }
func withFaults(n int) func(*Config)        { return func(c *Config) { c.Faults = n } }
func withWindow(start, healBy time.Duration) func(*Config) {
	return func(c *Config) { c.Start, c.HealBy = start, healBy }
}

func generate(t *testing.T, c Config) Schedule {
	t.Helper()
	s, err := Generate(c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDeterministic checks that a seed always gives the same schedule and
// that different seeds give different ones.
func TestDeterministic(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"default classes", config(withSeed(7))},
		{"one class", config(withSeed(8), withClasses(Delay))},
		{"many faults", config(withSeed(9), withFaults(8))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := generate(t, tt.cfg), generate(t, tt.cfg)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("same seed, different schedules:\n%s\n%s", a, b)
			}
			other := tt.cfg
			other.Seed += 1000
			if c := generate(t, other); reflect.DeepEqual(a.Faults, c.Faults) {
				t.Fatalf("seeds %d and %d drew the same schedule:\n%s", tt.cfg.Seed, other.Seed, a)
			}
		})
	}
}

// TestEveryClassReachable draws schedules from many seeds and checks that
// every class, every link and both directions of a one-way partition
// occur.
func TestEveryClassReachable(t *testing.T) {
	classes, links, reversed := map[Class]bool{}, map[Link]bool{}, map[bool]bool{}
	for seed := range uint64(300) {
		for _, f := range generate(t, config(withSeed(seed))).Faults {
			classes[f.Class] = true
			if f.Burst > 0 {
				classes[GraceBurst] = true
			}
			if f.Link != "" {
				links[f.Link] = true
			}
			if f.Class == PartitionOneWay {
				reversed[f.Reverse] = true
			}
		}
	}
	for _, c := range Classes {
		if !classes[c] {
			t.Errorf("class %s never drawn in 300 seeds", c)
		}
	}
	for _, l := range Links {
		if !links[l] {
			t.Errorf("link %s never drawn in 300 seeds", l)
		}
	}
	if !reversed[true] || !reversed[false] {
		t.Errorf("one-way partitions drawn in one direction only: %v", reversed)
	}
}

// TestBounded checks every fault of many schedules: inside the window,
// with targets of the cluster, the parameters of its class, and a grace
// burst's faults on different nodes within one grace period.
func TestBounded(t *testing.T) {
	windows := []struct {
		name          string
		start, healBy time.Duration
	}{
		{"usual window", time.Second, 10 * time.Second},
		{"short window", 500 * time.Millisecond, 2 * time.Second},
		{"long window", 2 * time.Second, 60 * time.Second},
	}
	known := map[string]bool{}
	for _, n := range testCluster.Nodes {
		known[n] = true
	}
	for _, s := range testCluster.Shards {
		known[s], known[RedisName(s)] = true, true
	}
	for _, w := range windows {
		t.Run(w.name, func(t *testing.T) {
			for seed := range uint64(200) {
				s := generate(t, config(withSeed(seed), withWindow(w.start, w.healBy), withFaults(5)))
				if len(s.Faults) == 0 {
					t.Fatalf("seed %d: no faults", seed)
				}
				if !slices.IsSortedFunc(s.Faults, func(a, b Fault) int { return int(a.At - b.At) }) {
					t.Fatalf("seed %d: faults not in order of start:\n%s", seed, s)
				}
				bursts := map[int][]Fault{}
				for _, f := range s.Faults {
					if f.At < w.start || f.End() > w.healBy || f.For < 0 {
						t.Fatalf("seed %d: %s outside [%v, %v]", seed, f, w.start, w.healBy)
					}
					for _, tg := range f.Targets {
						if !known[tg] {
							t.Fatalf("seed %d: %s targets %s, not a process of the cluster", seed, f, tg)
						}
					}
					checkParameters(t, seed, f)
					if f.Burst > 0 {
						bursts[f.Burst] = append(bursts[f.Burst], f)
					}
				}
				for _, b := range bursts {
					checkBurst(t, seed, w.healBy, b)
				}
			}
		})
	}
}

func checkParameters(t *testing.T, seed uint64, f Fault) {
	t.Helper()
	switch f.Class {
	case KillNode, KillShim, KillRedis:
		if f.For != 0 {
			t.Fatalf("seed %d: a kill lasts: %s", seed, f)
		}
	case Drop:
		if f.Probability < 0.1 || f.Probability > 0.5 || f.Link == "" {
			t.Fatalf("seed %d: drop without a link or with p outside [0.1, 0.5]: %s", seed, f)
		}
	case Delay:
		if f.Delay < 20*time.Millisecond || f.Delay > 300*time.Millisecond || f.Link == "" {
			t.Fatalf("seed %d: delay without a link or outside [20ms, 300ms]: %s", seed, f)
		}
	case PartitionOneWay, PartitionTwoWay:
		if f.Link == "" {
			t.Fatalf("seed %d: partition without a link: %s", seed, f)
		}
	}
	if f.Class != KillNode && f.Class != KillShim && f.Class != KillRedis && f.For <= 0 {
		t.Fatalf("seed %d: a lasting fault of no duration: %s", seed, f)
	}
}

// checkBurst checks that the faults of one grace burst hit two or more
// different nodes and start within one grace period (1s), and that its
// pauses outlast the grace period unless the window cut them short.
func checkBurst(t *testing.T, seed uint64, healBy time.Duration, burst []Fault) {
	t.Helper()
	if len(burst) < 2 {
		t.Fatalf("seed %d: a grace burst of one fault: %v", seed, burst)
	}
	nodes := map[string]bool{}
	starts := make([]time.Duration, len(burst))
	for i, f := range burst {
		if f.Class != KillNode && f.Class != PauseNode {
			t.Fatalf("seed %d: a burst of %s", seed, f)
		}
		if f.Class == PauseNode && f.For <= time.Second && f.End() < healBy {
			t.Fatalf("seed %d: a burst's pause ends inside the grace period: %s", seed, f)
		}
		nodes[f.Targets[0]] = true
		starts[i] = f.At
	}
	if len(nodes) != len(burst) {
		t.Fatalf("seed %d: a burst hits a node twice: %v", seed, burst)
	}
	if spread := slices.Max(starts) - slices.Min(starts); spread >= time.Second {
		t.Fatalf("seed %d: burst spread over %v, more than the grace period: %v", seed, spread, burst)
	}
}

// TestRejectsBadConfig checks the configurations Generate refuses.
func TestRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no cluster", config(func(c *Config) { c.Clusters = nil })},
		{"window under a second", config(withWindow(time.Second, 1500*time.Millisecond))},
		{"no grace period", config(func(c *Config) { c.Grace = 0 })},
		{"cluster without nodes", config(func(c *Config) { c.Clusters = []Cluster{{File: "x"}} })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if s, err := Generate(tt.cfg); err == nil {
				t.Fatalf("Generate accepted it:\n%s", s)
			}
		})
	}
}
