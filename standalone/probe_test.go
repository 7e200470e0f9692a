package standalone

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/internal/httpget"
)

// TestScrapeReadsOnlyTheWorkCounters checks that a scrape reads the work
// counters from a process's real metrics endpoint and asks it for nothing
// else.
func TestScrapeReadsOnlyTheWorkCounters(t *testing.T) {
	reg := prometheus.NewRegistry()
	counter := func(name string, v float64) {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: name})
		c.Add(v)
		reg.MustRegister(c)
	}
	counter(metricWork, 7)
	counter(metricInvalidations, 2)
	counter(metricUpdates, 3)
	counter("distcache_unrelated_total", 11)
	capacity := prometheus.NewGauge(prometheus.GaugeOpts{Name: metricCapacity, Help: metricCapacity})
	capacity.Set(200)
	reg.MustRegister(capacity)
	s, err := metrics.Listen("127.0.0.1:0", reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())

	got, err := newHTTPProber().scrape(context.Background(), s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if got.work != 7 || got.capacity != 200 || got.coherence != 5 {
		t.Fatalf("scraped %+v, want work 7, capacity 200, coherence 5", got)
	}
	resp, err := httpget.Get(t.Context(), "http://"+s.Addr()+scrapePath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(resp.Body, "distcache_unrelated_total") || !strings.Contains(resp.Body, metricWork) {
		t.Fatalf("GET %s answered\n%s\nwant the work counters only", scrapePath, resp.Body)
	}
}
