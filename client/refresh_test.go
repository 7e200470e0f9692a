package client

import (
	"sync"
	"testing"

	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/placement/partmap"
)

// fakeMaps is a MapSource that serves one placement and counts reads.
type fakeMaps struct {
	mu    sync.Mutex // guards p and reads
	p     *partmap.Placement
	reads int
}

func (f *fakeMaps) Refresh() (*partmap.Placement, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	return f.p, nil
}

func (f *fakeMaps) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads
}

func withMaps(m MapSource) clientOpt { return func(c *Config) { c.Maps = m } }

func TestFencedCandidateNotChosen(t *testing.T) {
	cl := newCluster(t)
	p := cl.withState(t, 0, 0, partmap.Fenced)
	c := newTestClient(t, p)
	for range 20 {
		if _, err := c.Get(testCtx(t), "k"); err != nil {
			t.Fatalf("Get: %v", err)
		}
	}
	if n := cl.nodes[0][0].requests(); n != 0 {
		t.Errorf("fenced node got %d reads, want none", n)
	}
	if n := cl.nodes[1][0].requests(); n != 20 {
		t.Errorf("the other layer's node got %d reads, want 20", n)
	}
}

// TestRefusalWithNewerMapRefreshes checks that a node refusing a read
// because its map is newer makes the client read its map source and route
// the read again under the new map, without failing or spending an attempt.
func TestRefusalWithNewerMapRefreshes(t *testing.T) {
	cl := newCluster(t, withLayers(1))
	old := cl.p
	fenced := cl.withState(t, 0, 0, partmap.Fenced)
	node := cl.nodes[0][0]
	node.set(nodeStatus(wire.StatusNotOwner), nodeMapVersion(uint64(fenced.Version())))
	cl.store("k", "stored")
	maps := &fakeMaps{p: fenced}
	c := newTestClient(t, old, withMaps(maps), withAttempts(2))
	v, err := c.Get(testCtx(t), "k")
	if err != nil || string(v) != "stored" {
		t.Fatalf("Get = %q, %v; want the shim's value", v, err)
	}
	if got := c.Placement().Version(); got != fenced.Version() {
		t.Errorf("client map version %d, want %d", got, fenced.Version())
	}
	if maps.count() != 1 || node.requests() != 1 || c.Stats().Refreshes != 1 {
		t.Errorf("map reads %d, node reads %d, stats %+v; want 1, 1, 1 refresh", maps.count(), node.requests(), c.Stats())
	}
	// Routed by the new map, the next read skips the fenced node.
	if _, err := c.Get(testCtx(t), "k"); err != nil || node.requests() != 1 {
		t.Errorf("second Get: %v, node reads %d; want the shim only", err, node.requests())
	}
}

// TestNewerMapInReplyRefreshesInBackground checks that any reply with a
// newer map version makes the client read its map source.
func TestNewerMapInReplyRefreshesInBackground(t *testing.T) {
	cl := newCluster(t, withLayers(1))
	old := cl.p
	bumped := old.Map().Clone()
	bumped.Version++
	newer := compile(t, bumped)
	cl.nodes[0][0].set(nodeMapVersion(uint64(newer.Version())))
	maps := &fakeMaps{p: newer}
	c := newTestClient(t, old, withMaps(maps))
	if _, err := c.Get(testCtx(t), "k"); err != nil {
		t.Fatalf("Get: %v", err)
	}
	waitFor(t, "the client to install the newer map", func() bool { return c.Placement().Version() == newer.Version() })
}

func TestSetMapIgnoresOlderMaps(t *testing.T) {
	cl := newCluster(t)
	old := cl.p
	next := cl.withState(t, 0, 0, partmap.Failed)
	c := newTestClient(t, next)
	c.SetMap(old)
	if got := c.Placement().Version(); got != next.Version() {
		t.Fatalf("client went back to map version %d from %d", got, next.Version())
	}
}
