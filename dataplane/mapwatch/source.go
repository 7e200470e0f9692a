package mapwatch

import (
	"context"
	"fmt"
	"os"
)

// Source is where a Watcher reads the map. Every Read must return the map
// the publisher had committed when the read started, or a newer one: the
// read observers renew a cache node's serving lease from the read's start
// time (docs/dataplane.md, Fencing), so a source that may return an older
// copy must be accounted for in the shims' --map-delivery-lag.
type Source interface {
	// Read returns the encoded map.
	Read(ctx context.Context) ([]byte, error)
	// String names the source in logs and errors.
	String() string
}

// Notifier is a Source that can tell when it may hold a new version: Run
// then reads it at once instead of waiting for the next poll. A
// notification may carry the map the source announced (a watch event's
// object): Run installs it at once if it is newer than the current map,
// without telling the read observers (no read started), and reads the
// source all the same; only a read renews what the observers keep.
type Notifier interface {
	// Notify calls changed whenever the source may have changed, until
	// ctx ends, with the encoded map the change carries (nil if none).
	Notify(ctx context.Context, changed func(offered []byte))
}

// File is the Source of a map file: the one standalone mode writes and
// renames on the processes' own host, or a mounted ConfigMap. A read of a
// local file returns what was renamed over it before the read started.
type File string

// Read reads the file.
func (f File) Read(context.Context) ([]byte, error) {
	raw, err := os.ReadFile(string(f))
	if err != nil {
		return nil, fmt.Errorf("cannot read partition map: %w", err)
	}
	return raw, nil
}

func (f File) String() string { return string(f) }
