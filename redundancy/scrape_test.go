package redundancy

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/distcache/distcache/dataplane/metrics"
)

// serve starts a real metrics server that reports hot and, when work is
// not nil, the work units it holds.
func serve(t *testing.T, hot metrics.HotKeys, work *atomic.Uint64) string {
	t.Helper()
	opts := []metrics.ServerOption{metrics.WithHotKeys(func() metrics.HotKeys { return hot })}
	if work != nil {
		opts = append(opts, metrics.WithWork(func() metrics.Work { return metrics.Work{Units: work.Load()} }))
	}
	s, err := metrics.Listen("127.0.0.1:0", prometheus.NewRegistry(), nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s.Addr()
}

func TestScrape(t *testing.T) {
	node := serve(t, metrics.HotKeys{Interval: 2, Keys: []metrics.KeyCount{{Key: []byte("a"), Reads: 100}}}, nil)
	var units atomic.Uint64
	units.Store(1000)
	shim := serve(t, metrics.HotKeys{Interval: 0.5, Keys: []metrics.KeyCount{{Key: []byte("a"), Reads: 5, Writes: 10}}}, &units)
	s := NewScraper()
	clock := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return clock }
	targets := Targets{Nodes: []string{node}, Shards: map[string]string{"shard-0": shim}}

	r, err := s.Scrape(t.Context(), targets)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Hits) != 1 || len(r.Hits[0]) != 1 || r.Hits[0][0] != (KeyRate{Key: "a", Reads: 50}) {
		t.Errorf("node report %+v, want a read 50 times a second", r.Hits)
	}
	sh := r.Shards["shard-0"]
	if len(sh.Keys) != 1 || sh.Keys[0] != (KeyRate{Key: "a", Reads: 10, Writes: 20}) || sh.Load != 0 {
		t.Errorf("first shim report %+v, want a at 10 reads and 20 writes a second, load unknown", sh)
	}

	clock = clock.Add(4 * time.Second)
	units.Store(3000)
	r, err = s.Scrape(t.Context(), targets)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Shards["shard-0"].Load; got != 500 {
		t.Errorf("shim load %v, want 2,000 units in 4 s = 500", got)
	}

	dead := "127.0.0.1:1"
	targets.Nodes = append(targets.Nodes, dead)
	r, err = s.Scrape(t.Context(), targets)
	if err == nil || !strings.Contains(err.Error(), dead) {
		t.Errorf("a dead node: error %v, want one naming %s", err, dead)
	}
	if len(r.Hits) != 1 || len(r.Shards) != 1 {
		t.Errorf("reports beside the dead node's: %+v", r)
	}
}
