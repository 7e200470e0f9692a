package controlloop_test

import (
	"bytes"
	"context"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/mapwatch"
	"github.com/distcache/distcache/failover"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/standalone/controlloop"
)

var update = flag.Bool("update", false, "rewrite golden files")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encoding changed; run go test -update if intended\n got %s\nwant %s", got, want)
	}
}

// configOption changes a test configuration.
type configOption func(*controlloop.FileConfig)

// newConfig is a valid configuration of two members, changed by opts.
func newConfig(opts ...configOption) controlloop.FileConfig {
	c := controlloop.FileConfig{
		MapFile: "/run/demo/map.json", EventsFile: "/run/demo/events.jsonl",
		Interval: controlloop.Duration(250 * time.Millisecond),
		Policy:   controlloop.PolicyOf(failover.Policy{Grace: time.Second, FenceLead: 500 * time.Millisecond, HoldDown: 3 * time.Second}),
		Members: []controlloop.MemberConfig{
			{Name: "demo-spine-0", HealthAddr: "127.0.0.1:40001"},
			{Name: "demo-leaf-0", HealthAddr: "127.0.0.1:40002"},
		},
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

func TestConfigEncoding(t *testing.T) {
	b, err := controlloop.EncodeConfig(newConfig())
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "config.golden.json", b)
	got, err := controlloop.DecodeConfig(b)
	if err != nil {
		t.Fatal(err)
	}
	if want := newConfig(); got.Policy != want.Policy || got.Interval != want.Interval || len(got.Members) != 2 || got.Members[1] != want.Members[1] {
		t.Fatalf("decoded %+v, want %+v", got, want)
	}
}

// withCopies makes the loop decide copies of hot keys.
func withCopies() configOption {
	return func(c *controlloop.FileConfig) {
		c.Copies = &controlloop.CopiesFileConfig{
			Interval: controlloop.Duration(5 * time.Second), NodeCapacity: 4000, ServerCapacity: 200, Slots: 100,
			Shards: []controlloop.ShardConfig{{Name: "demo-rack-0-0", MetricsAddr: "127.0.0.1:40101"}},
		}
	}
}

func TestConfigEncodingWithCopies(t *testing.T) {
	b, err := controlloop.EncodeConfig(newConfig(withCopies()))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "config-copies.golden.json", b)
	got, err := controlloop.DecodeConfig(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Copies == nil || got.Copies.NodeCapacity != 4000 || len(got.Copies.Shards) != 1 || got.Copies.Shards[0].MetricsAddr != "127.0.0.1:40101" {
		t.Fatalf("decoded copies %+v", got.Copies)
	}
}

func TestDecodeConfigRejects(t *testing.T) {
	encode := func(opts ...configOption) string {
		b, err := controlloop.EncodeConfig(newConfig(opts...))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	tests := []struct {
		name, data, want string
	}{
		{"no map file", encode(func(c *controlloop.FileConfig) { c.MapFile = "" }), "mapFile is empty"},
		{"no grace", encode(func(c *controlloop.FileConfig) { c.Policy.Grace = 0 }), "grace period must be positive"},
		{"negative fence lead", encode(func(c *controlloop.FileConfig) { c.Policy.FenceLead = -1 }), "fence lead must not be negative"},
		{"negative interval", encode(func(c *controlloop.FileConfig) { c.Interval = -1 }), "is negative"},
		{"member twice", encode(func(c *controlloop.FileConfig) { c.Members[1].Name = c.Members[0].Name }), "listed twice"},
		{"member without address", encode(func(c *controlloop.FileConfig) { c.Members[0].HealthAddr = "" }), "has no healthAddr"},
		{"unnamed member", encode(func(c *controlloop.FileConfig) { c.Members[0].Name = "" }), "has no name"},
		{"copies without capacities", encode(withCopies(), func(c *controlloop.FileConfig) { c.Copies.ServerCapacity = 0 }), "must be positive"},
		{"copies of an unreachable shard", encode(withCopies(), func(c *controlloop.FileConfig) { c.Copies.Shards[0].MetricsAddr = "" }), "needs a name and a metricsAddr"},
		{"negative copies interval", encode(withCopies(), func(c *controlloop.FileConfig) { c.Copies.Interval = -1 }), "copies: interval"},
		{"unknown field", `{"mapFile": "m", "policy": {"grace": "1s", "holdDown": "1s"}, "gracePeriod": "1s"}`, "unknown field"},
		{"bad duration", `{"mapFile": "m", "policy": {"grace": "soon", "holdDown": "1s"}}`, "cannot parse duration"},
		{"two objects", `{"mapFile": "m", "policy": {"grace": "1s", "holdDown": "1s"}} {}`, "data after the object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := controlloop.DecodeConfig([]byte(tc.data)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("DecodeConfig = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func FuzzDecodeConfig(f *testing.F) {
	if b, err := controlloop.EncodeConfig(newConfig()); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"mapFile": "m", "policy": {"grace": "1s", "holdDown": "1s"}}`))
	f.Add([]byte(`{"mapFile": "m", "interval": "-1s", "members": [{}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := controlloop.DecodeConfig(data)
		if err != nil {
			return
		}
		// What decodes is valid and encodes to what decodes the same.
		b, err := controlloop.EncodeConfig(c)
		if err != nil {
			t.Fatal(err)
		}
		again, err := controlloop.DecodeConfig(b)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", b, err)
		}
		if b2, _ := controlloop.EncodeConfig(again); !bytes.Equal(b, b2) {
			t.Fatalf("encoding is not stable:\n%s\n%s", b, b2)
		}
	})
}

func TestWriteAndLoadConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "controlloop.json")
	if err := controlloop.WriteConfig(path, newConfig(func(c *controlloop.FileConfig) { c.MapFile = "" })); err == nil {
		t.Fatal("WriteConfig wrote an invalid configuration")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("an invalid configuration left a file: %v", err)
	}
	want := newConfig()
	if err := controlloop.WriteConfig(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := controlloop.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.MapFile != want.MapFile || got.EventsFile != want.EventsFile || got.Policy.Policy() != want.Policy.Policy() {
		t.Fatalf("loaded %+v, want %+v", got, want)
	}
}

// member is an httptest server standing in for a cache node's /healthz.
type member struct {
	srv  *httptest.Server
	down atomic.Bool
}

func newMember(t *testing.T) *member {
	t.Helper()
	m := &member{}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" || m.down.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	}))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *member) addr() string { return strings.TrimPrefix(m.srv.URL, "http://") }

// TestOpenRunsFromTheFiles opens a loop from a configuration whose members
// are HTTP servers and whose map file holds version 3: a member whose
// /healthz fails is failed in version 4 and restored in version 5 once it
// answers again, and both changes are in the events file.
func TestOpenRunsFromTheFiles(t *testing.T) {
	m := newMap(t)
	dir := t.TempDir()
	cfg := controlloop.FileConfig{
		MapFile: filepath.Join(dir, "map.json"), EventsFile: filepath.Join(dir, "events.jsonl"),
		Interval: controlloop.Duration(10 * time.Millisecond),
		Policy:   controlloop.PolicyOf(failover.Policy{Grace: 50 * time.Millisecond, HoldDown: 50 * time.Millisecond}),
	}
	members := map[string]*member{}
	for _, l := range m.Layers {
		for _, mb := range l.Members {
			members[mb.Name] = newMember(t)
			cfg.Members = append(cfg.Members, controlloop.MemberConfig{Name: mb.Name, HealthAddr: members[mb.Name].addr()})
		}
	}
	if err := mapwatch.WriteFile(cfg.MapFile, withVersion(m, 3)); err != nil {
		t.Fatal(err)
	}
	victim := m.Layers[0].Members[1].Name
	members[victim].down.Store(true)
	loop, err := controlloop.Open(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if loop.Map().Version != 3 {
		t.Fatalf("opened at map v%d, want the published v3", loop.Map().Version)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); loop.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	poll.Until(t, victim+" failed", func() bool { return published(t, cfg.MapFile).Version == 4 })
	if got := published(t, cfg.MapFile); stateOf(t, got, victim) != partmap.Failed {
		t.Fatalf("v4 has %s %s, want Failed", victim, stateOf(t, got, victim))
	}
	members[victim].down.Store(false)
	poll.Until(t, victim+" restored", func() bool { return published(t, cfg.MapFile).Version == 5 })
	if got := published(t, cfg.MapFile); stateOf(t, got, victim) != partmap.Active {
		t.Fatalf("v5 has %s %s, want Active", victim, stateOf(t, got, victim))
	}
	// An event line is appended once its map version is published.
	var events []controlloop.Event
	poll.Eventually(t, "both events recorded", func() (bool, error) {
		var err error
		events, err = controlloop.ReadEvents(cfg.EventsFile)
		return len(events) == 2, err
	})
	if len(events) != 2 || events[0].To != partmap.Failed || events[0].MapVersion != 4 || events[1].To != partmap.Active || events[1].MapVersion != 5 {
		t.Fatalf("events = %+v, want %s failed in v4 and restored in v5", events, victim)
	}
}

func TestOpenRejects(t *testing.T) {
	m := newMap(t)
	dir := t.TempDir()
	mapFile := filepath.Join(dir, "map.json")
	if err := mapwatch.WriteFile(mapFile, m); err != nil {
		t.Fatal(err)
	}
	all := func(c *controlloop.FileConfig) {
		c.MapFile, c.Members = mapFile, nil
		for _, l := range m.Layers {
			for _, mb := range l.Members {
				c.Members = append(c.Members, controlloop.MemberConfig{Name: mb.Name, HealthAddr: "127.0.0.1:1"})
			}
		}
	}
	tests := []struct {
		name string
		cfg  controlloop.FileConfig
		want string
	}{
		{"a member without a health address", newConfig(all, func(c *controlloop.FileConfig) { c.Members = c.Members[1:] }), "has no health address"},
		{"no map file", newConfig(all, func(c *controlloop.FileConfig) { c.MapFile = filepath.Join(dir, "none.json") }), "no such file"},
		{"invalid configuration", newConfig(all, func(c *controlloop.FileConfig) { c.Policy.HoldDown = 0 }), "hold-down"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := controlloop.Open(tc.cfg, nil, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if _, err := controlloop.Open(newConfig(all), nil, nil); err != nil {
		t.Fatalf("Open of a complete configuration: %v", err)
	}
}
