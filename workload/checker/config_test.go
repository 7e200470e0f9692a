package checker

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/distcache/distcache/dataplane/mapwatch"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		want string // "" for valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"read only, uniform", func(c *Config) { c.WriteRatio, c.Skew = 0, 0 }, ""},
		{"no map", func(c *Config) { c.MapFile = "" }, "no partition map file or source"},
		{"map source", func(c *Config) { c.MapFile, c.MapSource = "", mapwatch.File("map.json") }, ""},
		{"file and source", func(c *Config) { c.MapSource = mapwatch.File("other.json") }, "both a partition map file and a map source"},
		{"negative keys", func(c *Config) { c.Keys = -1 }, "keys -1"},
		{"negative rate", func(c *Config) { c.Rate = -5 }, "negative rate -5"},
		{"write ratio above 1", func(c *Config) { c.WriteRatio = 1.5 }, "write ratio 1.5"},
		{"negative delete share", func(c *Config) { c.DeleteShare = -0.1 }, "delete share -0.1"},
		{"more stale clients than clients", func(c *Config) { c.Clients, c.StaleClients = 2, 3 }, "stale clients 3 outside [0, clients 2]"},
		{"negative workers", func(c *Config) { c.Workers = -2 }, "workers -2"},
		{"negative duration", func(c *Config) { c.Duration = -1 }, "negative duration"},
		{"shared registerer", func(c *Config) { c.Client.Registerer = prometheus.NewRegistry() }, "Registerer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{MapFile: "map.json", WriteRatio: 0.3, Skew: 1}
			tc.edit(&c)
			err := c.withDefaults().validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("valid configuration refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	c := Config{MapFile: "m"}.withDefaults()
	if c.Keys != DefaultKeys || c.Clients != DefaultClients || c.Workers != DefaultWorkers || c.Duration != DefaultDuration ||
		c.MaxOps != DefaultMaxOps || c.OpTimeout != DefaultOpTimeout || c.KeyPrefix != DefaultKeyPrefix || c.Logger == nil {
		t.Fatalf("defaults not applied: %+v", c)
	}
	if c.Skew != 0 || c.WriteRatio != 0 || c.DeleteShare != 0 {
		t.Fatalf("skew, write ratio and delete share must keep their zero values: %+v", c)
	}
}
