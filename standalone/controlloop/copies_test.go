package controlloop_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/distcache/distcache/failover"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/redundancy"
	"github.com/distcache/distcache/standalone/controlloop"
)

// reportSource is a ReportSource whose reports the test sets.
type reportSource struct {
	mu      sync.Mutex // guards reports and scrapes
	reports redundancy.Reports
	scrapes int
}

func (s *reportSource) Scrape(context.Context, redundancy.Targets) (redundancy.Reports, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scrapes++
	return s.reports, nil
}

func (s *reportSource) set(r redundancy.Reports) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reports = r
}

// shardReport reports key at its shard under m with the given rates.
func shardReport(t *testing.T, m *partmap.Map, key string, reads, writes float64) redundancy.Reports {
	t.Helper()
	p, err := partmap.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	r, s := p.Shard(key)
	return redundancy.Reports{Shards: map[string]redundancy.ShardReport{
		m.Storage.Racks[r].Shards[s].Name: {Keys: []redundancy.KeyRate{{Key: key, Reads: reads, Writes: writes}}},
	}}
}

// TestCopiesDecidedAndPublished: every copies interval the loop reads the
// reports, decides, and publishes a new map version only when the decided
// copies change: a key written more than read gets none, and loses its
// entry once it has been read far more than written for the rounds the
// loop remembers.
func TestCopiesDecidedAndPublished(t *testing.T) {
	m := newMap(t)
	path := filepath.Join(t.TempDir(), "map.json")
	probe := &readiness{notReady: map[string]bool{}}
	clk := &clock{now: time.Unix(1000, 0)}
	source := &reportSource{}
	source.set(shardReport(t, m, "written", 5, 20))
	reg := prometheus.NewRegistry()
	loop, err := controlloop.New(controlloop.Config{
		Policy: failover.Policy{Grace: 2 * time.Second, HoldDown: 5 * time.Second}, MapFile: path, Prober: probe, Now: clk.Now,
		Registerer: reg,
		Copies: &controlloop.CopiesConfig{
			Interval: 5 * time.Second, Source: source,
			// Prepared for twice the load: a key read 100 times a second
			// needs no more than one copy per layer.
			Plan: redundancy.Config{NodeCapacity: 1000, ServerCapacity: 100, Headroom: 2},
		},
	}, m)
	if err != nil {
		t.Fatal(err)
	}
	step := func(advance time.Duration) *partmap.Map {
		t.Helper()
		clk.advance(advance)
		if err := loop.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
		return loop.Map()
	}
	got := step(0)
	if got.Version != m.Version+1 || len(got.Copies) != 1 || string(got.Copies[0].Key) != "written" || len(got.Copies[0].Members) != 0 {
		t.Fatalf("first step: v%d copies %+v, want v%d with written uncached", got.Version, got.Copies, m.Version+1)
	}
	if f := published(t, path); f.Version != got.Version || len(f.Copies) != 1 {
		t.Fatalf("the map file has v%d copies %+v", f.Version, f.Copies)
	}
	if v := hotKeys(t, reg, "0"); v != 1 {
		t.Errorf("distcache_controlloop_hot_keys{copies=\"0\"} = %v, want 1", v)
	}
	if got = step(time.Second); got.Version != m.Version+1 || source.scrapes != 1 {
		t.Fatalf("within the interval: v%d after %d scrapes, want no new version and 1 scrape", got.Version, source.scrapes)
	}
	if got = step(5 * time.Second); got.Version != m.Version+1 || source.scrapes != 2 {
		t.Fatalf("the same decision: v%d after %d scrapes, want no new version and 2 scrapes", got.Version, source.scrapes)
	}
	// A key's rates are the largest of the last rounds (redundancy.Smoother):
	// it counts as written 20 times a second until that round is older
	// than the last DefaultSmoothRounds.
	source.set(shardReport(t, m, "written", 100, 1))
	for range redundancy.DefaultSmoothRounds - 1 {
		if got = step(5 * time.Second); len(got.Copies) == 0 {
			t.Fatalf("read far more than written in one round: v%d without decided copies, want the written rounds still counted", got.Version)
		}
	}
	if got = step(5 * time.Second); got.Version <= m.Version+1 || len(got.Copies) != 0 {
		t.Fatalf("read far more than written for %d rounds: v%d copies %+v, want a new version without decided copies", redundancy.DefaultSmoothRounds, got.Version, got.Copies)
	}
}

// hotKeys is distcache_controlloop_hot_keys{copies=copies} in reg.
func hotKeys(t *testing.T, reg prometheus.Gatherer, copies string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "distcache_controlloop_hot_keys" {
			continue
		}
		for _, mt := range f.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "copies" && l.GetValue() == copies {
					return mt.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no distcache_controlloop_hot_keys{copies=%q}", copies)
	return 0
}
