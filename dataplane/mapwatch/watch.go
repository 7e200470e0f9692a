// Package mapwatch follows a partition map through a Source: the file
// standalone mode writes (File), or the ConfigMap the operator publishes,
// read through the Kubernetes API (package kubemap). Every newer version is
// decoded, compiled and handed to the subscribers (cache node, shim,
// client) in one atomic step; an older version or a map that does not
// decode is ignored, so a bad write never takes the current map away.
//
// The source is polled every interval, which bounds how late a new version
// is seen whatever else fails. A source that is also a Notifier triggers an
// immediate read when it may have changed, so a new version is installed
// as soon as it is published: a File is watched with inotify (its
// directory, so that renames and a mounted ConfigMap's symlink swaps are
// seen), the ConfigMap through the Kubernetes API. A notification
// that carries the map (a ConfigMap watch event) installs it before that
// read when it is newer: a remap reaches the subscribers without waiting
// for a GET on a loaded API server. Installs are serialized and only ever
// move to a newer version.
//
// Every read that finds the current map (unchanged, or newer and installed)
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
	"sync"
	"time"

	"github.com/google/renameio/v2"

	"github.com/distcache/distcache/placement/partmap"
)

// DefaultInterval is the polling period of Run.
const DefaultInterval = 200 * time.Millisecond

// Subscriber receives every newer map.
type Subscriber func(*partmap.Placement) error

// ReadObserver learns of every read of the file that found the current
// map: when the read started and the map's version.
type ReadObserver func(at time.Time, version int64)

// ReadTimeout bounds one Read of the source. A read slower than the
// serving lease renews nothing anyway: the lease counts from its start.
const ReadTimeout = 2 * time.Second

// Watcher holds the current map of one source.
type Watcher struct {
	src    Source
	path   string // src.String()
	logger *slog.Logger

	// reload serializes Reload: it is held across a read, the install and
	// the observers, so that installs and observations stay in read order.
	reload sync.Mutex
	// install serializes installs (Reload's and offer's): held across the
	// version check and the subscribers, so they see versions in order.
	install sync.Mutex

	mu      sync.Mutex // guards the fields below
	cur     *partmap.Placement
	raw     []byte
	offered bool // cur came from a notification, not a read
	subs    []Subscriber
	obs     []ReadObserver
}

// Load reads and compiles the map file at path; it fails when the file does
// not hold a valid map.
func Load(path string, logger *slog.Logger) (*Watcher, error) {
	return Open(context.Background(), File(path), logger)
}

// Open reads and compiles the map of src; it fails when src cannot be read
// or does not hold a valid map.
func Open(ctx context.Context, src Source, logger *slog.Logger) (*Watcher, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	raw, err := src.Read(ctx)
	if err != nil {
		return nil, err
	}
	p, err := compile(src.String(), raw, nil)
	if err != nil {
		return nil, err
	}
	return &Watcher{src: src, path: src.String(), logger: logger, cur: p, raw: raw}, nil
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

// Source is where the watcher reads its map.
func (w *Watcher) Source() Source { return w.src }

// Refresh reads the source now (Reload) and returns the current map: the
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

// Reload reads the source once (within ReadTimeout). It reports whether a
// newer map was installed; subscribers run before it returns, in order, and
// their errors are joined. When the source holds the current map
// (unchanged, or newer and applied by every subscriber) the read observers
// learn when the read started. A failed read observes nothing.
func (w *Watcher) Reload() (bool, error) {
	w.reload.Lock()
	defer w.reload.Unlock()
	at := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), ReadTimeout)
	raw, err := w.src.Read(ctx)
	cancel()
	if err != nil {
		return false, err
	}
	w.install.Lock()
	defer w.install.Unlock()
	w.mu.Lock()
	cur, same, offered := w.cur, bytes.Equal(raw, w.raw), w.offered
	subs, obs := w.subs, w.obs
	w.mu.Unlock()
	if same {
		observe(obs, at, cur.Version())
		return false, nil
	}
	p, err := compile(w.path, raw, cur)
	if err != nil {
		return false, err
	}
	switch {
	case p.Version() < cur.Version() && offered:
		// The read started before a notification installed a newer
		// map: not the current map, and nothing wrong with the source.
		return false, nil
	case p.Version() < cur.Version():
		return false, fmt.Errorf("cannot install partition map %s: version %d is older than the current %d", w.path, p.Version(), cur.Version())
	case p.Version() == cur.Version():
		return false, fmt.Errorf("cannot install partition map %s: content changed without a version bump (still %d)", w.path, p.Version())
	}
	if err := w.installLocked(p, raw, subs, false); err != nil {
		return true, err
	}
	observe(obs, at, p.Version())
	return true, nil
}

// offer installs raw, a map a notification carried, if it is newer than
// the current map; anything else about it is only logged (the read the
// notification triggers decides). The read observers learn nothing.
func (w *Watcher) offer(raw []byte) {
	w.install.Lock()
	defer w.install.Unlock()
	w.mu.Lock()
	cur, same, subs := w.cur, bytes.Equal(raw, w.raw), w.subs
	w.mu.Unlock()
	if same {
		return
	}
	p, err := compile(w.path, raw, cur)
	if err != nil || p.Version() <= cur.Version() {
		w.logger.Debug("not installing the map a notification carried", "source", w.path, "err", err)
		return
	}
	if err := w.installLocked(p, raw, subs, true); err != nil {
		w.logger.Warn("partition map installed from a notification", "source", w.path, "version", p.Version(), "err", err)
	}
}

// installLocked makes p (encoded raw) the current map and hands it to
// subs; w.install must be held. offered says whether a notification
// carried it.
func (w *Watcher) installLocked(p *partmap.Placement, raw []byte, subs []Subscriber, offered bool) error {
	w.mu.Lock()
	w.cur, w.raw, w.offered = p, raw, offered
	w.mu.Unlock()
	var errs []error
	for _, fn := range subs {
		if err := fn(p); err != nil {
			errs = append(errs, err)
		}
	}
	w.logger.Info("installed partition map", "source", w.path, "version", p.Version(), "from_notification", offered)
	if len(errs) > 0 {
		return fmt.Errorf("cannot apply partition map version %d: %w", p.Version(), errors.Join(errs...))
	}
	return nil
}

// observe tells the read observers obs that a read started at at found
// the current map, at version.
func observe(obs []ReadObserver, at time.Time, version int64) {
	for _, fn := range obs {
		fn(at, version)
	}
}

// Run reads the source every interval, and whenever a Notifier source says
// it may have changed, until ctx ends, logging failures.
func (w *Watcher) Run(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultInterval
	}
	changed := make(chan struct{}, 1) // one pending notification is enough: the read that follows sees every change before it
	if n, ok := w.src.(Notifier); ok {
		go func() {
			n.Notify(ctx, func(offered []byte) {
				if offered != nil {
					w.offer(offered)
				}
				select {
				case changed <- struct{}{}:
				default:
				}
			})
			if ctx.Err() == nil {
				w.logger.Info("the map source sends no more change notifications; polling it alone",
					"source", w.path, "interval", interval)
			}
		}()
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-changed:
		}
		if _, err := w.Reload(); err != nil {
			w.logger.Warn("keeping the current partition map", "source", w.path, "version", w.Current().Version(), "err", err)
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
	if err := renameio.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("cannot write partition map: %w", err)
	}
	return nil
}
