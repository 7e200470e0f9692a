// Package mapwatch follows a partition map file: the ConfigMap the operator
// publishes and data-plane pods mount, or the file standalone mode writes.
// Every newer version is decoded, compiled and handed to the subscribers
// (cache node, shim, client) in one atomic step; an older version or a file
// that does not decode is ignored, so a bad write never takes the current
// map away.
//
// The file is polled rather than watched with inotify: Kubernetes updates a
// mounted ConfigMap by swapping a symlink, which polling sees reliably.
//
// Every poll that finds the current map (unchanged, or newer and installed)
// is also reported to the read observers with the time the read started:
// a cache node renews its serving lease from it (docs/dataplane.md,
// Fencing), so a node that stops reading its map stops serving cached
// values.
package mapwatch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/distcache/distcache/placement/partmap"
)

// DefaultInterval is the polling period of Run.
const DefaultInterval = 200 * time.Millisecond

// Subscriber receives every newer map.
type Subscriber func(*partmap.Placement) error

// ReadObserver learns of every read of the file that found the current
// map: when the read started and the map's version.
type ReadObserver func(at time.Time, version int64)

// Watcher holds the current map of one file.
type Watcher struct {
	path   string
	logger *slog.Logger

	mu   sync.Mutex // guards the fields below
	cur  *partmap.Placement
	raw  []byte
	subs []Subscriber
	obs  []ReadObserver
}

// Load reads and compiles the map at path; it fails when the file does not
// hold a valid map.
func Load(path string, logger *slog.Logger) (*Watcher, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	raw, p, err := read(path)
	if err != nil {
		return nil, err
	}
	return &Watcher{path: path, logger: logger, cur: p, raw: raw}, nil
}

func read(path string) ([]byte, *partmap.Placement, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read partition map: %w", err)
	}
	p, err := compile(path, raw, nil)
	return raw, p, err
}

// compile decodes raw, read from path, and compiles it, reusing what it
// can of prev (partmap.Recompile).
func compile(path string, raw []byte, prev *partmap.Placement) (*partmap.Placement, error) {
	m, err := partmap.Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("cannot load partition map %s: %w", path, err)
	}
	p, err := partmap.Recompile(prev, m)
	if err != nil {
		return nil, fmt.Errorf("cannot load partition map %s: %w", path, err)
	}
	return p, nil
}

// Current returns the current map.
func (w *Watcher) Current() *partmap.Placement {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cur
}

// Refresh reads the file now (Reload) and returns the current map: the
// newer one if the file had it. A client uses it as its map source.
func (w *Watcher) Refresh() (*partmap.Placement, error) {
	_, err := w.Reload()
	return w.Current(), err
}

// Subscribe adds fn, which is called with every newer map (not the current
// one).
func (w *Watcher) Subscribe(fn Subscriber) {
	w.mu.Lock()
	w.subs = append(w.subs, fn)
	w.mu.Unlock()
}

// OnRead adds fn, which is called after every read that found the current
// map, once the subscribers have applied it.
func (w *Watcher) OnRead(fn ReadObserver) {
	w.mu.Lock()
	w.obs = append(w.obs, fn)
	w.mu.Unlock()
}

// Reload reads the file once. It reports whether a newer map was installed;
// subscribers run before it returns, in order, and their errors are joined.
// When the file holds the current map (unchanged, or newer and applied by
// every subscriber) the read observers learn when the read started.
func (w *Watcher) Reload() (bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	at := time.Now()
	raw, err := os.ReadFile(w.path)
	if err != nil {
		return false, fmt.Errorf("cannot read partition map: %w", err)
	}
	if bytes.Equal(raw, w.raw) {
		w.observe(at)
		return false, nil
	}
	p, err := compile(w.path, raw, w.cur)
	if err != nil {
		return false, err
	}
	switch {
	case p.Version() < w.cur.Version():
		return false, fmt.Errorf("cannot install partition map %s: version %d is older than the current %d", w.path, p.Version(), w.cur.Version())
	case p.Version() == w.cur.Version():
		return false, fmt.Errorf("cannot install partition map %s: content changed without a version bump (still %d)", w.path, p.Version())
	}
	w.cur, w.raw = p, raw
	var errs []error
	for _, fn := range w.subs {
		if err := fn(p); err != nil {
			errs = append(errs, err)
		}
	}
	w.logger.Info("installed partition map", "path", w.path, "version", p.Version())
	if len(errs) > 0 {
		return true, fmt.Errorf("cannot apply partition map version %d: %w", p.Version(), errors.Join(errs...))
	}
	w.observe(at)
	return true, nil
}

// observe tells the read observers that a read started at at found the
// current map. The caller holds mu.
func (w *Watcher) observe(at time.Time) {
	for _, fn := range w.obs {
		fn(at, w.cur.Version())
	}
}

// Run polls the file every interval until ctx ends, logging failures.
func (w *Watcher) Run(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := w.Reload(); err != nil {
				w.logger.Warn("keeping the current partition map", "path", w.path, "version", w.Current().Version(), "err", err)
			}
		}
	}
}

// WriteFile writes m to path atomically (a temporary file renamed over it),
// so a reader never sees a partial map.
func WriteFile(path string, m *partmap.Map) error {
	data, err := partmap.Encode(m)
	if err != nil {
		return fmt.Errorf("cannot write partition map: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".partmap-*")
	if err != nil {
		return fmt.Errorf("cannot write partition map: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("cannot write partition map: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("cannot write partition map: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("cannot write partition map: %w", err)
	}
	return nil
}
