package driver

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestConfigDefaults(t *testing.T) {
	c := Config{MapFile: "m"}.WithDefaults()
	if c.Keys != DefaultKeys || c.Skew != DefaultSkew || c.ValueSize != DefaultValueSize ||
		c.Duration != DefaultDuration || c.Concurrency != DefaultConcurrency || c.Clients != DefaultClients ||
		c.Preload != DefaultPreload || c.Warmup != DefaultWarmup || c.Interval != DefaultInterval ||
		c.ProbeDuration != DefaultProbeDuration || c.OpTimeout != DefaultOpTimeout ||
		c.CheckTimeout != DefaultCheckTimeout || c.Logger == nil || !slices.Equal(c.Modes, []Mode{NoCache, DistCache}) {
		t.Fatalf("defaults %+v", c)
	}
	tests := []struct {
		name  string
		in    Config
		check func(Config) bool
	}{
		{"uniform", Config{Uniform: true, Skew: 0.9}, func(c Config) bool { return c.Skew == 0 }},
		{"preload bounded by keys", Config{Keys: 10}, func(c Config) bool { return c.Preload == 10 }},
		{"no preload", Config{Preload: -1}, func(c Config) bool { return c.Preload == 0 }},
		{"no warm-up", Config{Warmup: -time.Second}, func(c Config) bool { return c.Warmup == 0 }},
		{"modes in order", Config{Modes: []Mode{DistCache, NoCache, DistCache}},
			func(c Config) bool { return slices.Equal(c.Modes, []Mode{NoCache, DistCache}) }},
	}
	for _, tt := range tests {
		if c := tt.in.WithDefaults(); !tt.check(c) {
			t.Errorf("%s: %+v", tt.name, c)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	ok := Config{MapFile: "m"}
	tests := []struct {
		name   string
		change func(*Config)
		want   string // in the error; "" = valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"no map", func(c *Config) { c.MapFile = "" }, "no map file"},
		{"write ratio", func(c *Config) { c.WriteRatio = 1.5 }, "write ratio"},
		{"negative rate", func(c *Config) { c.Rate = -1 }, "rate"},
		{"unknown mode", func(c *Config) { c.Modes = []Mode{"replication"} }, "unknown mode"},
		{"failure without member", func(c *Config) { c.Failure = &Failure{At: time.Second} }, "without a member"},
		{"failure without distcache", func(c *Config) {
			c.Modes = []Mode{NoCache}
			c.Failure = &Failure{Member: "x"}
		}, "not run"},
		{"failure modes", func(c *Config) {
			c.Failure = &Failure{Member: "x", Mode: FailPause}
		}, ""},
		{"unknown failure mode", func(c *Config) { c.Failure = &Failure{Member: "x", Mode: "explode"} }, "unknown failure mode"},
		{"slow without a delay", func(c *Config) { c.Failure = &Failure{Member: "x", Mode: FailSlow} }, "positive delay"},
		{"slow with a delay", func(c *Config) {
			c.Failure = &Failure{Member: "x", Mode: FailSlow, Delay: 100 * time.Millisecond}
		}, ""},
		{"kill ignores a delay", func(c *Config) { c.Failure = &Failure{Member: "x", Mode: FailKill, Delay: -1} }, ""},
		{"shared registerer", func(c *Config) { c.Client.Registerer = prometheus.NewRegistry() }, "Registerer"},
		{"hot set on a rack", func(c *Config) { c.HotRacks = 1 }, ""},
		{"negative hot racks", func(c *Config) { c.HotRacks = -1 }, "hot racks -1 must not be negative"},
		{"hot racks over too many keys", func(c *Config) { c.HotRacks, c.Keys = 1, MaxHotRacksKeys+1 }, "needs a table of every key"},
		{"hot-set shift", func(c *Config) { c.ShiftAt = 5 * time.Second }, ""},
		{"negative hot-set shift", func(c *Config) { c.ShiftAt = -time.Second }, "must not be negative"},
		{"hot-set shift at the window's end", func(c *Config) { c.ShiftAt = DefaultDuration }, "within the measured window"},
		{"hot-set shift after the window", func(c *Config) {
			c.Duration, c.ShiftAt = 2*time.Second, 3*time.Second
		}, "within the measured window"},
		{"hot-set shift without distcache", func(c *Config) {
			c.Modes, c.ShiftAt = []Mode{NoCache}, time.Second
		}, "not run"},
	}
	for _, tt := range tests {
		c := ok
		tt.change(&c)
		err := c.WithDefaults().validate()
		if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestParseFailureMode(t *testing.T) {
	tests := []struct {
		in      string
		want    FailureMode
		wantErr bool
	}{
		{"kill", FailKill, false},
		{"pause", FailPause, false},
		{"slow", FailSlow, false},
		{"", "", true},
		{"Kill", "", true},
		{"stop", "", true},
	}
	for _, tt := range tests {
		got, err := ParseFailureMode(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("ParseFailureMode(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}
