package mapwatch

import (
	"context"
	"path/filepath"

	"github.com/fsnotify/fsnotify"
)

// configMapData is the symlink a kubelet swaps to publish a mounted
// ConfigMap's new files at once: the map file links through it.
const configMapData = "..data"

// Notify watches the file's directory with inotify until ctx ends and calls
// changed on every event that may have changed the file: one naming it (a
// rename over it, as WriteFile does, or a write) or the ..data symlink a
// kubelet swaps under a mounted ConfigMap. The directory is watched, not
// the file, because a rename replaces the file the watch would follow.
// Polling stays the guarantee: when inotify is not available (its
// per-user limit reached) or fails, Notify returns and Run goes on
// polling. File implements Notifier.
func (f File) Notify(ctx context.Context, changed func(offered []byte)) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return
	}
	defer w.Close()
	dir, name := filepath.Split(filepath.Clean(string(f)))
	if dir == "" {
		dir = "."
	}
	if err := w.Add(dir); err != nil {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if base := filepath.Base(ev.Name); base == name || base == configMapData {
				changed(nil)
			}
		case _, ok := <-w.Errors:
			if !ok {
				return
			}
			// An overflowed queue lost events: the file may have changed.
			changed(nil)
		}
	}
}
