package standalone

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/distcache/distcache/dataplane/metrics"
)

// probeTimeout bounds one health check or scrape.
const probeTimeout = 500 * time.Millisecond

// Metrics the scraper reads from every shim and cache node.
const (
	metricWork          = "distcache_work_units_total"
	metricCapacity      = "distcache_work_capacity"
	metricInvalidations = "distcache_coherence_invalidations_total"
	metricUpdates       = "distcache_coherence_updates_total"
)

// scrapePath asks for the work counters alone (promhttp's name[] filter):
// a full scrape renders and parses every metric of every process, which on
// a small machine stalls the data plane when a benchmark reads them all
// just before it injects a failure.
var scrapePath = "/metrics?" + url.Values{"name[]": {metricWork, metricCapacity, metricInvalidations, metricUpdates}}.Encode()

// httpProber checks processes over their metrics endpoints.
type httpProber struct {
	client *http.Client
}

func newHTTPProber() *httpProber {
	return &httpProber{client: &http.Client{Timeout: probeTimeout, Transport: &http.Transport{
		MaxIdleConnsPerHost: 2, DisableCompression: true,
	}}}
}

// ok reports whether GET http://addr/path answers 200 (a process's
// /healthz, Prometheus's /-/ready).
func (p *httpProber) ok(ctx context.Context, addr, path string) bool {
	resp, err := p.get(ctx, addr, path)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode == http.StatusOK
}

// listening reports whether a TCP server accepts connections on addr.
func listening(ctx context.Context, addr string) bool {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

// sample is what one scrape of a shim or node found.
type sample struct {
	at        time.Time // when it was read
	work      uint64
	capacity  float64
	coherence uint64
}

// scrape reads the work counters from http://addr/metrics.
func (p *httpProber) scrape(ctx context.Context, addr string) (sample, error) {
	resp, err := p.get(ctx, addr, scrapePath)
	if err != nil {
		return sample{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return sample{}, fmt.Errorf("cannot scrape %s: HTTP %s", addr, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return sample{}, fmt.Errorf("cannot parse the metrics of %s: %w", addr, err)
	}
	return sample{
		work:      uint64(sum(families[metricWork])),
		capacity:  sum(families[metricCapacity]),
		coherence: uint64(sum(families[metricInvalidations]) + sum(families[metricUpdates])),
	}, nil
}

func (p *httpProber) get(ctx context.Context, addr, path string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return nil, fmt.Errorf("cannot probe %s: %w", addr, err)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot probe %s: %w", addr, err)
	}
	return resp, nil
}

// sum adds up every series of a counter or gauge family (nil: 0).
func sum(f *dto.MetricFamily) float64 {
	if f == nil {
		return 0
	}
	total := 0.0
	for _, m := range f.GetMetric() {
		total += metrics.Value(m)
	}
	return total
}
