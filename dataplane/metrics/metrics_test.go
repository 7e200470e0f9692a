package metrics_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
)

func TestRegisterTransportAndRequests(t *testing.T) {
	reg, wrapped := metrics.Registry("node", "n0")
	ep, err := transport.Listen(transport.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	if err := metrics.RegisterTransport(wrapped, ep); err != nil {
		t.Fatal(err)
	}
	r, err := metrics.NewRequests(wrapped)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := metrics.NewRequests(wrapped); err == nil {
		t.Fatal("registering the request metrics twice succeeded")
	}
	r.Observe(wire.OpGet, metrics.ResultHit, time.Microsecond)
	r.Observe(wire.OpGet, metrics.StatusResult(wire.StatusNotFound), -1)
	r.Observe(wire.OpPut, "no such result", time.Millisecond)
	var nilRequests *metrics.Requests
	nilRequests.Observe(wire.OpGet, metrics.ResultHit, 0) // must not panic
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Fatalf("metrics do not gather cleanly: %v %v", err, problems)
	}
	n, err := testutil.GatherAndCount(reg, "distcache_requests_total", "distcache_datagrams_total", "distcache_malformed_packets_total")
	if err != nil {
		t.Fatal(err)
	}
	// Every request op (10) × result (11) is pre-created, so the hot path
	// never allocates a child; plus 2 datagram directions and 1 malformed
	// counter.
	if n != 10*11+3 {
		t.Fatalf("gathered %d series, want %d", n, 10*11+3)
	}
	hit, err := testutil.GatherAndCount(reg, "distcache_request_duration_seconds")
	if err != nil || hit != 10 {
		t.Fatalf("duration series %d (%v), want 10", hit, err)
	}
}

func TestValue(t *testing.T) {
	v := func(f float64) *float64 { return &f }
	tests := []struct {
		name string
		m    *dto.Metric
		want float64
	}{
		{"counter", &dto.Metric{Counter: &dto.Counter{Value: v(3)}}, 3},
		{"gauge", &dto.Metric{Gauge: &dto.Gauge{Value: v(-1.5)}}, -1.5},
		{"untyped", &dto.Metric{Untyped: &dto.Untyped{Value: v(7)}}, 7},
		{"histogram", &dto.Metric{Histogram: &dto.Histogram{SampleSum: v(9)}}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := metrics.Value(tc.m); got != tc.want {
				t.Fatalf("Value = %v, want %v", got, tc.want)
			}
		})
	}
}
