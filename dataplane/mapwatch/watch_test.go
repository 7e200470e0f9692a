package mapwatch_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/mapwatch"
	"github.com/distcache/distcache/placement/partmap"
)

func testMap(t *testing.T) *partmap.Map {
	t.Helper()
	m, err := partmap.Build(partmap.Spec{
		Cluster: "demo", Racks: 2, ShardsPerRack: 1, StorageSeed: 7,
		Layers: []partmap.LayerSpec{{Name: "spine", Nodes: 2, Seed: 11}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestReload(t *testing.T) {
	m1 := testMap(t)
	m2, _, err := m1.WithState(m1.Layers[0].Members[0].Name, partmap.Failed)
	if err != nil {
		t.Fatal(err)
	}
	bumped := m1.Clone()
	bumped.Cluster = "other" // same version, different content
	tests := []struct {
		name      string
		write     func(path string) error
		changed   bool
		wantErr   string
		wantVer   int64
		notifyVer int64
		readVer   int64 // the version read observers learn of; 0: not told
	}{
		{"same bytes", func(string) error { return nil }, false, "", 1, 0, 1},
		{"newer version", func(p string) error { return mapwatch.WriteFile(p, m2) }, true, "", 2, 2, 2},
		{"garbage", func(p string) error { return os.WriteFile(p, []byte("{"), 0o600) }, false, "cannot load partition map", 1, 0, 0},
		{"content without a version bump", func(p string) error { return mapwatch.WriteFile(p, bumped) }, false, "without a version bump", 1, 0, 0},
		{"missing file", os.Remove, false, "cannot read partition map", 1, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "map.json")
			if err := mapwatch.WriteFile(path, m1); err != nil {
				t.Fatal(err)
			}
			w, err := mapwatch.Load(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			var notified, read int64
			var readAt time.Time
			w.Subscribe(func(p *partmap.Placement) error { notified = p.Version(); return nil })
			w.OnRead(func(at time.Time, v int64) { readAt, read = at, v })
			if err := tt.write(path); err != nil {
				t.Fatal(err)
			}
			before := time.Now()
			changed, err := w.Reload()
			if read != tt.readVer || read != 0 && (readAt.Before(before) || readAt.After(time.Now())) {
				t.Fatalf("read observer told version %d at %v, want %d during the Reload", read, readAt, tt.readVer)
			}
			if changed != tt.changed || (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Reload = %v, %v; want %v, error containing %q", changed, err, tt.changed, tt.wantErr)
			}
			if v := w.Current().Version(); v != tt.wantVer {
				t.Fatalf("current version %d, want %d", v, tt.wantVer)
			}
			if notified != tt.notifyVer {
				t.Fatalf("subscriber saw version %d, want %d", notified, tt.notifyVer)
			}
		})
	}
}

func TestReloadRefusesOlderVersion(t *testing.T) {
	m1 := testMap(t)
	m2, _, err := m1.WithState(m1.Layers[0].Members[0].Name, partmap.Failed)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "map.json")
	if err := mapwatch.WriteFile(path, m2); err != nil {
		t.Fatal(err)
	}
	w, err := mapwatch.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := mapwatch.WriteFile(path, m1); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Reload(); err == nil || !strings.Contains(err.Error(), "older") {
		t.Fatalf("Reload of an older map: %v", err)
	}
	if w.Current().Version() != 2 {
		t.Fatalf("version regressed to %d", w.Current().Version())
	}
}

func TestSubscriberErrorsAreReported(t *testing.T) {
	m1 := testMap(t)
	m2, _, _ := m1.WithState(m1.Layers[0].Members[1].Name, partmap.Failed)
	path := filepath.Join(t.TempDir(), "map.json")
	if err := mapwatch.WriteFile(path, m1); err != nil {
		t.Fatal(err)
	}
	w, err := mapwatch.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	w.Subscribe(func(*partmap.Placement) error { return boom })
	if err := mapwatch.WriteFile(path, m2); err != nil {
		t.Fatal(err)
	}
	read := false
	w.OnRead(func(time.Time, int64) { read = true })
	changed, err := w.Reload()
	if !changed || !errors.Is(err, boom) {
		t.Fatalf("Reload = %v, %v; want true and the subscriber's error", changed, err)
	}
	if read {
		t.Fatal("a map a subscriber could not apply was reported as read")
	}
}

func TestLoadRejectsInvalidFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "map.json")
	if err := os.WriteFile(path, []byte(`{"format":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := mapwatch.Load(path, nil); err == nil {
		t.Fatal("Load accepted an invalid map")
	}
}
