package client

import (
	"sync"

	"github.com/distcache/distcache/placement/partmap"
)

// MapSource is where a client reads a newer partition map when a reply shows
// that its own is out of date. A mapwatch.Watcher is one, over a map file
// or the operator's ConfigMap read through the Kubernetes API
// (kubemap.Source).
type MapSource interface {
	// Refresh reads the map now and returns the newest the source has.
	Refresh() (*partmap.Placement, error)
}

// refresher reads the map source for a client, one read at a time: callers
// that ask while a read is running wait for it and share its result.
type refresher struct {
	src MapSource

	mu      sync.Mutex    // guards running
	running chan struct{} // closed when the read in progress ends; nil when idle
}

// seen records that a peer uses map version v. When v is newer than the
// client's and a source is configured, it reads the source and installs
// what it found (SetMap ignores an older map). wait makes the caller wait
// for the read; otherwise it runs in the background. It reports whether the
// client's map is at version v or newer afterwards (always false without
// waiting).
func (c *Client) seen(v uint64, wait bool) bool {
	if c.refresh.src == nil || v <= c.view.Load().version {
		return v <= c.view.Load().version
	}
	done := c.refresh.start(c)
	if !wait {
		return false
	}
	<-done
	return v <= c.view.Load().version
}

// start starts a read of the source unless one is running, and returns the
// channel closed when the running read ends.
func (r *refresher) start(c *Client) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running != nil {
		return r.running
	}
	done := make(chan struct{})
	r.running = done
	go func() {
		defer func() {
			r.mu.Lock()
			r.running = nil
			r.mu.Unlock()
			close(done)
		}()
		c.stats.refreshes.Add(1)
		p, err := r.src.Refresh()
		if err != nil {
			c.cfg.Logger.Warn("cannot refresh the partition map", "err", err)
			return
		}
		c.SetMap(p)
	}()
	return done
}
