package mapwatch_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/mapwatch"
	"github.com/distcache/distcache/placement/partmap"
)

// notifyingFile is a map file whose writer tells the watcher when it wrote
// it, as kubemap's watch does for a ConfigMap.
type notifyingFile struct {
	mapwatch.File
	wrote chan struct{}
}

func (f notifyingFile) Notify(ctx context.Context, changed func()) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.wrote:
			changed()
		}
	}
}

// TestRunReadsOnNotification runs the watcher with a poll interval longer
// than the test: only the source's notification can make it read the new
// version, and the read observers learn of that read.
func TestRunReadsOnNotification(t *testing.T) {
	m1 := testMap(t)
	m2, _, err := m1.WithState(m1.Layers[0].Members[0].Name, partmap.Fenced)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "map.json")
	if err := mapwatch.WriteFile(path, m1); err != nil {
		t.Fatal(err)
	}
	src := notifyingFile{File: mapwatch.File(path), wrote: make(chan struct{})}
	w, err := mapwatch.Open(context.Background(), src, nil)
	if err != nil {
		t.Fatal(err)
	}
	installed := make(chan int64, 1)
	read := make(chan int64, 10)
	w.Subscribe(func(p *partmap.Placement) error { installed <- p.Version(); return nil })
	w.OnRead(func(_ time.Time, v int64) { read <- v })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx, time.Hour) }()
	defer func() { cancel(); <-done }()

	if err := mapwatch.WriteFile(path, m2); err != nil {
		t.Fatal(err)
	}
	src.wrote <- struct{}{}
	select {
	case v := <-installed:
		if v != m2.Version {
			t.Fatalf("installed version %d, want %d", v, m2.Version)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the notification did not make the watcher read the new version within 30s")
	}
	if v := <-read; v != m2.Version {
		t.Fatalf("read observers told version %d, want %d", v, m2.Version)
	}
}

func TestOpenFailsOnUnreadableSource(t *testing.T) {
	if _, err := mapwatch.Open(context.Background(), mapwatch.File(filepath.Join(t.TempDir(), "missing.json")), nil); err == nil {
		t.Fatal("Open of a missing file succeeded")
	}
}
