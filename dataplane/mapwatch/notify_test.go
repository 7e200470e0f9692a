package mapwatch_test

import (
	"context"
	"path/filepath"
	"sync"
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

func (f notifyingFile) Notify(ctx context.Context, changed func(offered []byte)) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.wrote:
			changed(nil)
		}
	}
}

// runWatcher opens src and runs its watcher, polling every hour (only
// notifications make it read), until the test ends; it returns the watcher
// and the versions its subscriber and its read observers receive.
func runWatcher(t *testing.T, src mapwatch.Source) (w *mapwatch.Watcher, installed, read chan int64) {
	t.Helper()
	w, err := mapwatch.Open(context.Background(), src, nil)
	if err != nil {
		t.Fatal(err)
	}
	installed, read = make(chan int64, 4), make(chan int64, 10)
	w.Subscribe(func(p *partmap.Placement) error { installed <- p.Version(); return nil })
	w.OnRead(func(_ time.Time, v int64) { read <- v })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx, time.Hour) }()
	t.Cleanup(func() { cancel(); <-done })
	return w, installed, read
}

// fencedNext writes a map file and returns its path and the map's next
// version, with a member fenced.
func fencedNext(t *testing.T) (string, *partmap.Map) {
	t.Helper()
	m1 := testMap(t)
	m2, _, err := m1.WithState(m1.Layers[0].Members[0].Name, partmap.Fenced)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "map.json")
	if err := mapwatch.WriteFile(path, m1); err != nil {
		t.Fatal(err)
	}
	return path, m2
}

// TestRunReadsOnNotification runs the watcher with a poll interval longer
// than the test: only the source's notification can make it read the new
// version, and the read observers learn of that read.
func TestRunReadsOnNotification(t *testing.T) {
	path, m2 := fencedNext(t)
	src := notifyingFile{File: mapwatch.File(path), wrote: make(chan struct{})}
	_, installed, read := runWatcher(t, src)

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

// laggingSource is a source whose reads return what the test last set,
// and whose notifications carry a map the reads may not return yet, as a
// watch event can run ahead of a GET on a loaded API server.
type laggingSource struct {
	mu     sync.Mutex // guards raw
	raw    []byte
	offers chan []byte // each notification, with the map it carries (nil: none)
}

func (s *laggingSource) set(raw []byte) { s.mu.Lock(); s.raw = raw; s.mu.Unlock() }

func (s *laggingSource) Read(context.Context) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.raw, nil
}

func (s *laggingSource) String() string { return "lagging" }

func (s *laggingSource) Notify(ctx context.Context, changed func(offered []byte)) {
	for {
		select {
		case <-ctx.Done():
			return
		case raw := <-s.offers:
			changed(raw)
		}
	}
}

// TestRunInstallsTheOfferedMap notifies a newer map that the source's
// reads do not return yet: the watcher installs it at once, and the read
// observers (a cache node's serving lease) learn of it only from a read
// that finds it. An offer older than the current map installs nothing.
func TestRunInstallsTheOfferedMap(t *testing.T) {
	m1 := testMap(t)
	m2, _, err := m1.WithState(m1.Layers[0].Members[0].Name, partmap.Fenced)
	if err != nil {
		t.Fatal(err)
	}
	raw1, raw2 := encode(t, m1), encode(t, m2)
	src := &laggingSource{raw: raw1, offers: make(chan []byte)}
	w, installed, read := runWatcher(t, src)

	src.offers <- raw2 // the read it triggers still returns m1
	if v := <-installed; v != m2.Version {
		t.Fatalf("installed version %d from the offer, want %d", v, m2.Version)
	}
	src.offers <- raw1 // older than the current map, and the read returns m1 too
	src.set(raw2)
	src.offers <- nil // a read that finds m2
	for v := range read {
		if v == m2.Version {
			break
		}
		t.Fatalf("read observers told version %d before a read found %d", v, m2.Version)
	}
	select {
	case v := <-installed:
		t.Fatalf("installed version %d again, or an older one", v)
	default:
	}
	if got := w.Current().Version(); got != m2.Version {
		t.Fatalf("current version %d, want %d", got, m2.Version)
	}
}

func encode(t *testing.T, m *partmap.Map) []byte {
	t.Helper()
	raw, err := partmap.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestRunReadsTheFileInotifySaysChanged runs the watcher of a plain map
// file with a poll interval longer than the test: only inotify
// (File.Notify) can make it read the version WriteFile renames over the
// file. The watch starts on Run's goroutine, so the test writes the new
// version again until it is installed (rewriting the same version changes
// nothing).
func TestRunReadsTheFileInotifySaysChanged(t *testing.T) {
	path, m2 := fencedNext(t)
	_, installed, _ := runWatcher(t, mapwatch.File(path))
	for attempt := range 300 {
		if err := mapwatch.WriteFile(path, m2); err != nil {
			t.Fatal(err)
		}
		select {
		case v := <-installed:
			if v != m2.Version {
				t.Fatalf("installed version %d, want %d", v, m2.Version)
			}
			return
		case <-time.After(100 * time.Millisecond):
			t.Logf("write %d: not installed yet", attempt+1)
		}
	}
	t.Fatal("inotify did not make the watcher read the new version in 300 writes")
}
