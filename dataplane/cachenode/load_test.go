package cachenode

import (
	"math"
	"net/netip"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// The load in a reply counts every GET at once, whether or not the tally
// has reached the meter yet, and decays once the GETs stop.
func TestLoadCountsTalliedGets(t *testing.T) {
	const window = 100 * time.Millisecond
	tests := []struct {
		name     string
		gets     int
		spacing  time.Duration // between GETs
		readAt   time.Duration // after the last GET
		min, max uint32
	}{
		{"fewer than a batch, at once", loadBatch / 2, 0, 0, loadBatch / 2, loadBatch / 2},
		{"several batches, at once", 5*loadBatch + 3, 0, 0, 5*loadBatch + 3, 5*loadBatch + 3},
		{"spread over periods", 100, 100 * time.Microsecond, 0, 90, 100},
		{"ten windows later", 100, 0, 10 * window, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.LoadWindow = window
			n, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = n.Close() })
			now := int64(time.Second)
			for i := range tc.gets {
				if i > 0 {
					now += int64(tc.spacing)
				}
				n.countGet(now)
			}
			if got := n.loadAt(now + int64(tc.readAt)); got < tc.min || got > tc.max {
				t.Fatalf("load = %d, want %d…%d", got, tc.min, tc.max)
			}
		})
	}
}

// TestHitsTimedOneInSixteen serves 64 hits within one tally period: all
// are counted, and the GETs that open each tally of 32 and the sixteenth
// after them are timed (4).
func TestHitsTimedOneInSixteen(t *testing.T) {
	reg := prometheus.NewRegistry()
	cfg := testConfig()
	cfg.Registerer = reg
	n, req := hitFixtureWith(t, cfg)
	n.tally.period = math.MaxInt64 // a tally is added at 32 GETs only
	counted0, timed0 := getHits(t, reg)
	const hits = 64
	for range hits {
		m := req // the handler rewrites the request into its reply
		n.handle(discardSender{}, netip.MustParseAddrPort("127.0.0.1:9"), &m)
	}
	counted, timed := getHits(t, reg)
	if counted-counted0 != hits || timed-timed0 != hits/timedGets {
		t.Errorf("%v hits counted, %d timed; want %d, %d", counted-counted0, timed-timed0, hits, hits/timedGets)
	}
}

// getHits gathers the GET hits reg counted and the GETs it timed.
func getHits(t *testing.T, reg *prometheus.Registry) (counted float64, timed uint64) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	labels := func(m *dto.Metric) map[string]string {
		out := map[string]string{}
		for _, l := range m.GetLabel() {
			out[l.GetName()] = l.GetValue()
		}
		return out
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			l := labels(m)
			switch {
			case mf.GetName() == "distcache_requests_total" && l["op"] == "GET" && l["result"] == "hit":
				counted = m.GetCounter().GetValue()
			case mf.GetName() == "distcache_request_duration_seconds" && l["op"] == "GET":
				timed = m.GetHistogram().GetSampleCount()
			}
		}
	}
	return counted, timed
}
