package standalone

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/distcache/distcache/dataplane/metrics"
)

// TestScrapeReadsTheWorkEndpoint checks that a scrape reads a process's
// real /work endpoint, and that a process without one is an error.
func TestScrapeReadsTheWorkEndpoint(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    []metrics.ServerOption
		want    sample
		wantErr string
	}{
		{
			name: "work", want: sample{work: 7, capacity: 200, coherence: 5},
			opts: []metrics.ServerOption{metrics.WithWork(func() metrics.Work {
				return metrics.Work{Units: 7, Capacity: 200, Coherence: 5}
			})},
		},
		{name: "no work endpoint", wantErr: "HTTP 404"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := metrics.Listen("127.0.0.1:0", prometheus.NewRegistry(), nil, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close(context.Background())
			got, err := newHTTPProber().scrape(context.Background(), s.Addr())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("scrape = %+v, %v; want an error with %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("scraped %+v, want %+v", got, tc.want)
			}
		})
	}
}
