package cachenode

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/placement/partmap"
)

// startDrain drains the harness's node on a goroutine until ctx ends, and
// returns when the node reports it drains; Drain's result arrives on the
// channel.
func startDrain(h *harness, ctx context.Context) <-chan error {
	h.t.Helper()
	done := make(chan error, 1)
	go func() { done <- h.node.Drain(ctx) }()
	poll.Eventually(h.t, "the node draining", func() (bool, error) {
		err := h.node.Healthy()
		return errors.Is(err, ErrDraining), err
	})
	return done
}

// TestDrainRefusesReadsAndAcknowledgesWrites: a draining node answers no
// read, not even of a valid copy, so that readers go elsewhere at once,
// and still acknowledges invalidations; it stops draining once its map
// has shown it Fenced for twice its lease.
func TestDrainRefusesReadsAndAcknowledgesWrites(t *testing.T) {
	h := newHarness(t, withConfig(func(c *Config) { c.Lease = 20 * time.Millisecond }))
	h.cache("k", "cached", 5)
	done := startDrain(h, context.Background())
	if rep := h.get("k"); rep.Status != wire.StatusUnavailable || rep.Has(wire.FlagHit) {
		t.Fatalf("GET while draining: %s hit=%v, want unavailable and no hit", rep.Status, rep.Has(wire.FlagHit))
	}
	h.invalidate("k", 6) // fails the test unless acknowledged
	if h.node.Renew(time.Now(), h.m.Version) {
		t.Fatal("a draining node renewed its lease")
	}
	select {
	case err := <-done:
		t.Fatalf("Drain ended while the node was Active: %v", err)
	default:
	}
	h.setState(0, partmap.Fenced)
	if err := <-done; err != nil {
		t.Fatalf("Drain after the node was fenced: %v, want released", err)
	}
}

// TestDrainEndsWithItsContext: a node its map never fences drains until
// the caller gives up.
func TestDrainEndsWithItsContext(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := startDrain(h, ctx)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Drain = %v, want context.Canceled", err)
	}
}
