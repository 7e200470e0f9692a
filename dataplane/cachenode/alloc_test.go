package cachenode

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/placement/hashing"
	"github.com/distcache/distcache/placement/partmap"
)

// discardSender drops what the handler sends.
type discardSender struct{}

func (discardSender) Send(netip.AddrPort, *wire.Message) error { return nil }

// recordSender keeps the last header sent.
type recordSender struct {
	last  wire.Header
	value string
}

func (r *recordSender) Send(_ netip.AddrPort, m *wire.Message) error {
	r.last, r.value = m.Header, string(m.Value)
	return nil
}

// hitFixture is a node (not started: its handler is called directly) that
// holds one valid, tracked entry, and a GET request for it.
func hitFixture(tb testing.TB) (*Node, wire.Message) {
	tb.Helper()
	return hitFixtureWith(tb, testConfig())
}

// hitFixtureWith is hitFixture for a node configured by cfg.
func hitFixtureWith(tb testing.TB, cfg Config) (*Node, wire.Message) {
	tb.Helper()
	// A long load window: the meter never rebases (its only allocation)
	// during a test.
	cfg.LoadWindow = time.Hour
	n, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = n.Close() })
	m, err := partmap.Build(partmap.Spec{Cluster: testCluster, Racks: 1, ShardsPerRack: 1,
		Layers: []partmap.LayerSpec{{Name: testLayer, Nodes: 1}}}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	p, err := partmap.Compile(m)
	if err != nil {
		tb.Fatal(err)
	}
	if err := n.SetMap(p); err != nil {
		tb.Fatal(err)
	}
	n.Renew(time.Now(), m.Version) // cfg.Lease outlasts the test
	// Longer than the 32 bytes a string conversion may keep on the stack.
	key := strings.Repeat("hot-key/", 8)
	e, _ := n.store.addPlaceholder(key, 0)
	if n.store.fill(key, e, 9, []byte(strings.Repeat("v", 100)), false) != fillApplied {
		tb.Fatal("fill not applied")
	}
	n.det.Track(key)
	req := wire.Message{
		Header: wire.Header{Op: wire.OpGet, Seq: 77, Digest: hashing.DigestOfString(key)},
		Key:    []byte(key),
	}
	return n, req
}

func TestHitPathDoesNotAllocate(t *testing.T) {
	tests := []struct {
		name string
		rate float64
	}{
		{"unlimited capacity", 0},
		// Far above the test's pace: every unit is there at once, the
		// limiter's path that does not wait.
		{"capacity not reached", 1e12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.EmulatedRate = tt.rate
			n, req := hitFixtureWith(t, cfg)
			src := netip.MustParseAddrPort("127.0.0.1:9")
			rec := &recordSender{}
			m := req
			n.handle(rec, src, &m)
			if rec.last.Op != wire.OpGetReply || !rec.last.Has(wire.FlagHit|wire.FlagTelemetry) ||
				rec.last.Seq != 77 || rec.last.ValueVersion != 9 || len(rec.value) != 100 {
				t.Fatalf("reply %+v (%d bytes), want a hit", rec.last, len(rec.value))
			}

			allocs := testing.AllocsPerRun(1000, func() {
				m = req // the handler rewrites the request into its reply
				n.handle(discardSender{}, src, &m)
			})
			if allocs != 0 {
				t.Errorf("hit path: %v allocations per GET, want 0", allocs)
			}
			if s := n.Stats(); s.Hits != 1002 || s.Work != 1002 {
				t.Errorf("Hits = %d, Work = %d, want 1002 and a unit per hit", s.Hits, s.Work)
			}
		})
	}
}

func BenchmarkHit(b *testing.B) {
	n, req := hitFixture(b)
	src := netip.MustParseAddrPort("127.0.0.1:9")
	var m wire.Message
	b.ReportAllocs()
	for b.Loop() {
		m = req
		n.handle(discardSender{}, src, &m)
	}
}

func BenchmarkHitParallel(b *testing.B) {
	n, req := hitFixture(b)
	src := netip.MustParseAddrPort("127.0.0.1:9")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var m wire.Message
		for pb.Next() {
			m = req
			n.handle(discardSender{}, src, &m)
		}
	})
}

// BenchmarkHitSampled is BenchmarkHit with every key sampled for the
// miss-ratio curve: the estimator's locked path on every hit, as for the
// reads of a sampled hot key (a fraction Config.MRC.InitialRate of keys).
func BenchmarkHitSampled(b *testing.B) {
	cfg := testConfig()
	cfg.MRC.InitialRate = 1
	n, req := hitFixtureWith(b, cfg)
	src := netip.MustParseAddrPort("127.0.0.1:9")
	var m wire.Message
	b.ReportAllocs()
	for b.Loop() {
		m = req
		n.handle(discardSender{}, src, &m)
	}
}
