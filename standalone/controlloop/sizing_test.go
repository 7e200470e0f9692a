package controlloop_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/failover"
	"github.com/distcache/distcache/layersizing"
	"github.com/distcache/distcache/standalone/controlloop"
)

// curveServers are the nodes' metrics servers (the real ones), whose
// curves the test sets: reads a second spread evenly over keys keys.
type curveServers struct {
	mu     sync.Mutex // guards curves
	curves map[string]metrics.MissRatioCurve
	addrs  map[string]string
}

func startCurveServers(t *testing.T, members []string) *curveServers {
	t.Helper()
	s := &curveServers{curves: map[string]metrics.MissRatioCurve{}, addrs: map[string]string{}}
	for _, name := range members {
		srv, err := metrics.Listen("127.0.0.1:0", prometheus.NewRegistry(), nil, metrics.WithMissRatioCurve(func() metrics.MissRatioCurve {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.curves[name]
		}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.Close(context.Background()) })
		s.addrs[name] = srv.Addr()
	}
	return s
}

func (s *curveServers) set(member string, reads float64, keys int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.curves[member] = metrics.MissRatioCurve{Window: 1, Requests: uint64(reads), Hits: uint64(reads / 2),
		Points: []metrics.CurvePoint{{Entries: keys, MissRatio: 0}}}
}

// TestSizingSplitsAndPublishes: every sizing interval the loop reads the
// nodes' curves and publishes the split of the budget: first the budget
// spread evenly, then, once the curves show the leaves need only their
// racks' 50 keys, the rest to the spines; unchanged curves publish
// nothing.
func TestSizingSplitsAndPublishes(t *testing.T) {
	m := newMap(t)
	var members []string
	for _, l := range m.Layers {
		for _, mb := range l.Members {
			members = append(members, mb.Name)
		}
	}
	servers := startCurveServers(t, members)
	path := filepath.Join(t.TempDir(), "map.json")
	clk := &clock{now: time.Unix(1000, 0)}
	loop, err := controlloop.New(controlloop.Config{
		Policy: failover.Policy{Grace: 2 * time.Second, HoldDown: 5 * time.Second}, MapFile: path,
		Prober: &readiness{notReady: map[string]bool{}}, Now: clk.Now, Registerer: prometheus.NewRegistry(),
		Sizing: &controlloop.SizingConfig{
			Interval: 5 * time.Second, Source: layersizing.NewScraper(), Targets: servers.addrs,
			Plan: layersizing.Config{Budget: 1000, Layers: []string{"spine", "leaf"}, Start: map[string]int{"spine": 100, "leaf": 100}},
		},
	}, m)
	if err != nil {
		t.Fatal(err)
	}
	step := func(advance time.Duration) (spine, leaf int, version int64) {
		t.Helper()
		clk.advance(advance)
		if err := loop.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
		pm := published(t, path)
		return pm.Layers[0].Entries, pm.Layers[1].Entries, pm.Version
	}
	if spine, leaf, _ := step(0); spine != 200 || leaf != 200 {
		t.Fatalf("no reads yet: %d a spine and %d a leaf, want the 1,000 entries spread evenly (200 each)", spine, leaf)
	}
	for _, l := range m.Layers {
		for _, mb := range l.Members {
			if l.Name == "spine" {
				servers.set(mb.Name, 900, 300)
			} else {
				servers.set(mb.Name, 300, 50)
			}
		}
	}
	if spine, leaf, _ := step(time.Second); spine != 200 || leaf != 200 {
		t.Fatalf("before the interval: %d and %d, want the split unchanged", spine, leaf)
	}
	spine, leaf, version := step(5 * time.Second)
	if spine != 300 || leaf != 50 {
		t.Fatalf("after the curves: %d a spine and %d a leaf, want 300 and 50", spine, leaf)
	}
	if _, _, again := step(5 * time.Second); again != version {
		t.Fatalf("the same curves published version %d after %d", again, version)
	}
}
