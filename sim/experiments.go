package sim

import (
	"fmt"
	"slices"
)

// Experiment is one of the paper's evaluation figures.
type Experiment struct {
	// Name is the value of --experiment and the base name of the outputs.
	Name string
	// Figure is the figure of the paper it reproduces.
	Figure string
	// XLabel describes the variable.
	XLabel string
	// Run computes the experiment's results from a base configuration.
	Run func(base Config, quick bool, progress func(string)) ([]Result, error)
}

// Experiments lists the experiments in report order.
var Experiments = []Experiment{
	{Name: "skew", Figure: "9a", XLabel: "Zipf skew (0 = uniform)", Run: runSkew},
	{Name: "cachesize", Figure: "9b", XLabel: "cached objects per cache node", Run: runCacheSize},
	{Name: "scale", Figure: "9c", XLabel: "storage racks (32 servers each)", Run: runScale},
	{Name: "writes", Figure: "10", XLabel: "write ratio", Run: runWrites},
	{Name: "failure", Figure: "11", XLabel: "time (telemetry windows)", Run: runFailure},
}

// Lookup returns the experiment called name.
func Lookup(name string) (Experiment, error) {
	for _, e := range Experiments {
		if e.Name == name {
			return e, nil
		}
	}
	names := make([]string, 0, len(Experiments))
	for _, e := range Experiments {
		names = append(names, e.Name)
	}
	return Experiment{}, fmt.Errorf("unknown experiment %q (known: %v)", name, names)
}

// sweep evaluates every strategy at each x, with set applying x to the base
// configuration.
func sweep(name string, base Config, xs []float64, set func(*Config, float64), progress func(string)) ([]Result, error) {
	var out []Result
	for _, x := range xs {
		cfg := base
		set(&cfg, x)
		if progress != nil {
			progress(fmt.Sprintf("%s: x=%g", name, x))
		}
		rs, err := Evaluate(cfg, Strategies)
		if err != nil {
			return nil, fmt.Errorf("cannot run %s at %g: %w", name, x, err)
		}
		for _, r := range rs {
			r.Experiment, r.X = name, x
			out = append(out, r)
		}
	}
	return out, nil
}

func runSkew(base Config, _ bool, progress func(string)) ([]Result, error) {
	return sweep("skew", base, []float64{0, 0.9, 0.95, 0.99, 1.1, 1.2},
		func(c *Config, x float64) { c.Skew = x }, progress)
}

func runCacheSize(base Config, _ bool, progress func(string)) ([]Result, error) {
	return sweep("cachesize", base, []float64{10, 20, 50, 100, 200, 500, 1000},
		func(c *Config, x float64) { c.CachePerNode = int(x) }, progress)
}

func runScale(base Config, quick bool, progress func(string)) ([]Result, error) {
	racks := []float64{4, 8, 16, 32, 64, 128, 256, 512, 1024}
	if quick {
		racks = racks[:6]
	}
	return sweep("scale", base, racks, func(c *Config, x float64) {
		c.Racks, c.Spines, c.ServersPerRack = int(x), int(x), 32
	}, progress)
}

// writeScenarios are the two settings of Figure 10.
var writeScenarios = []struct {
	name  string
	skew  float64
	cache int
}{
	{"writes/zipf-0.9,10-per-node", 0.9, 10},
	{"writes/zipf-0.99,100-per-node", 0.99, 100},
}

func runWrites(base Config, _ bool, progress func(string)) ([]Result, error) {
	var out []Result
	for _, sc := range writeScenarios {
		cfg := base
		cfg.Skew, cfg.CachePerNode = sc.skew, sc.cache
		rs, err := sweep(sc.name, cfg, []float64{0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1},
			func(c *Config, x float64) { c.WriteRatio = x }, progress)
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	return out, nil
}

// Series returns the experiment names in results, in first-seen order.
func Series(results []Result) []string {
	return firstSeen(results, func(r Result) string { return r.Experiment })
}

// firstSeen returns the distinct values of key over results, in the order
// they first appear.
func firstSeen[T comparable](results []Result, key func(Result) T) []T {
	var out []T
	for _, r := range results {
		if v := key(r); !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}
