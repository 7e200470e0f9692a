package loadgen_test

import (
	"context"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/loadgen"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
)

// hitServer answers every GET as a cache hit, except that it ignores the
// requests for which drop returns true.
func hitServer(t *testing.T, drop func(n uint64) bool) *transport.Endpoint {
	t.Helper()
	ep, err := transport.Listen(transport.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Uint64
	ep.Start(func(out transport.Sender, src netip.AddrPort, req *wire.Message) {
		if drop(n.Add(1)) {
			return
		}
		rep := wire.Message{Header: req.Header, Key: req.Key, Value: []byte("v")}
		rep.Op, rep.Flags = wire.OpGetReply, wire.FlagHit
		_ = out.Send(src, &rep)
	})
	t.Cleanup(func() { _ = ep.Close() })
	return ep
}

func TestRun(t *testing.T) {
	tests := []struct {
		name     string
		batch    int
		bundle   int
		drop     func(uint64) bool
		wantLost bool
	}{
		{"batched", 8, 0, func(uint64) bool { return false }, false},
		{"one datagram per call", 1, 0, func(uint64) bool { return false }, false},
		{"bundles of 5", 8, 5, func(uint64) bool { return false }, false},
		{"lost requests are replaced", 8, 0, func(n uint64) bool { return n%50 == 0 }, true},
		{"lost requests in bundles are replaced", 8, 4, func(n uint64) bool { return n%50 == 0 }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := hitServer(t, tt.drop)
			// Only dropped requests may count as lost: without drops the
			// timeout is far longer than any reply can take on a loaded
			// machine; with drops it is short so the run replaces them.
			timeout := 10 * time.Second
			if tt.wantLost {
				timeout = 20 * time.Millisecond
			}
			res, err := loadgen.Run(context.Background(), loadgen.Config{
				Target: srv.Addr(), Keys: []string{"a", "b", "c"}, Concurrency: 16, Batch: tt.batch, Bundle: tt.bundle,
				Requests: 2000, Duration: time.Minute, Timeout: timeout,
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Replies < 2000 || res.Hits != res.Replies || res.Errors != 0 {
				t.Fatalf("replies %d, hits %d, errors %d; want >= 2000 replies, all hits", res.Replies, res.Hits, res.Errors)
			}
			if st := srv.Stats(); (st.BundlesIn > 0) != (tt.bundle > 1) {
				t.Fatalf("the server received %d bundles, want bundles: %v", st.BundlesIn, tt.bundle > 1)
			}
			if (res.Lost > 0) != tt.wantLost {
				t.Fatalf("lost %d, want lost > 0: %v", res.Lost, tt.wantLost)
			}
			if res.Latency.Count() != res.Replies || res.Latency.Quantile(0.99) < res.Latency.Quantile(0.5) {
				t.Fatalf("latency histogram: %d samples, p50 %v, p99 %v", res.Latency.Count(), res.Latency.Quantile(0.5), res.Latency.Quantile(0.99))
			}
		})
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	addr := netip.MustParseAddrPort("127.0.0.1:9")
	for name, cfg := range map[string]loadgen.Config{
		"no keys":     {Target: addr, Requests: 1},
		"no bound":    {Target: addr, Keys: []string{"k"}},
		"concurrency": {Target: addr, Keys: []string{"k"}, Requests: 1, Concurrency: loadgen.MaxConcurrency + 1},
		"bundle":      {Target: addr, Keys: []string{"k"}, Requests: 1, Concurrency: 4, Bundle: 5},
		"bundle size": {Target: addr, Keys: []string{strings.Repeat("k", 200)}, Requests: 1, Concurrency: 64, Bundle: 64},
	} {
		if _, err := loadgen.Run(context.Background(), cfg); err == nil {
			t.Errorf("%s: Run accepted %+v", name, cfg)
		}
	}
}

func TestHistogramQuantiles(t *testing.T) {
	h := loadgen.NewHistogram()
	for i := 1; i <= 100; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	h.Record(time.Second) // beyond the range: last bucket
	// 101 samples: the median is the 51st, 51 µs, in the bucket [51, 52) µs.
	if got := h.Quantile(0.5); got != 52*time.Microsecond {
		t.Errorf("p50 = %v, want 52µs", got)
	}
	if got := h.Quantile(1); got != 100*time.Millisecond {
		t.Errorf("p100 = %v, want the overflow bucket", got)
	}
}
