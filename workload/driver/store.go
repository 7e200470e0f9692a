package driver

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/distcache/distcache/client"
)

// Store is what the driver's operations go through: a client.Client, or a
// Redis client in front of a gateway or of a sharding proxy (Config.Via,
// Config.Twemproxy).
type Store interface {
	// Get returns key's value, or an error wrapping client.ErrNotFound.
	Get(ctx context.Context, key string) ([]byte, error)
	// Put writes key's value.
	Put(ctx context.Context, key string, value []byte) error
}

// RedisWorker is a Cluster that can count what its storage shards' Redis
// servers served themselves: the Twemproxy mode's operations reach Redis
// without passing a storage shim, whose work units Cluster.Work counts.
type RedisWorker interface {
	// RedisWork returns, per storage shard, the GET and SET commands its
	// Redis served so far as Units (Node false), with the shard's emulated
	// capacity.
	RedisWork(ctx context.Context) ([]Work, error)
}

// twemproxyPrefix starts every key of the Twemproxy mode. Its writes reach
// Redis behind the cache's back (no shim invalidates a cached copy), so it
// works on keys of its own, which no cache node ever holds.
const twemproxyPrefix = "twemproxy:"

// ModeKey is the key a run of mode reads and writes for key: twemproxy has
// keys of its own.
func ModeKey(mode Mode, key string) string {
	if mode == Twemproxy {
		return twemproxyPrefix + key
	}
	return key
}

// storesFor returns the stores mode's operations go through and the clients
// whose Stats count them (nil for Twemproxy).
func (r *runner) storesFor(mode Mode) ([]Store, []*client.Client) {
	switch mode {
	case NoCache:
		return r.bypassStores, r.bypass
	case Twemproxy:
		return []Store{r.cfg.Twemproxy}, nil
	default:
		return r.routedStores, r.routed
	}
}

// work reads the cluster's work as mode's loads are measured: the shims'
// and nodes' work units, or for Twemproxy its Redis servers' commands.
func (r *runner) work(ctx context.Context, mode Mode) ([]Work, error) {
	if mode != Twemproxy {
		return r.cluster.Work(ctx)
	}
	rw, ok := r.cluster.(RedisWorker)
	if !ok {
		return nil, errors.New("cannot measure twemproxy: the cluster cannot count its Redis servers' commands")
	}
	return rw.RedisWork(ctx)
}

// wrapClients puts every client behind cfg.Via, if set.
func (r *runner) wrapClients() error {
	var err error
	if r.routedStores, err = r.storesOf(r.routed); err != nil {
		return err
	}
	r.bypassStores, err = r.storesOf(r.bypass)
	return err
}

// storesOf returns what operations on cs go through: each client, or
// cfg.Via's store of it. On an error the stores made so far are returned
// too, for closeStores.
func (r *runner) storesOf(cs []*client.Client) ([]Store, error) {
	out := make([]Store, 0, len(cs))
	for _, c := range cs {
		if r.cfg.Via == nil {
			out = append(out, c)
			continue
		}
		s, err := r.cfg.Via(c)
		if err != nil {
			return out, fmt.Errorf("cannot run benchmark: %w", err)
		}
		out = append(out, s)
	}
	return out, nil
}

// closeStores closes the stores that Config.Via made.
func (r *runner) closeStores() {
	if r.cfg.Via == nil {
		return
	}
	for _, s := range append(r.routedStores, r.bypassStores...) {
		if c, ok := s.(io.Closer); ok {
			if err := c.Close(); err != nil {
				r.log.Warn("cannot close store", "err", err)
			}
		}
	}
}
