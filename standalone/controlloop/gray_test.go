package controlloop

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/metrics"
)

// TestPingProberGrayPatience checks that a member whose PINGs go
// unanswered is not Ready after the gray failure patience when its
// /healthz reports capacity to spare, and only after the full patience
// when it reports being busy or nothing.
func TestPingProberGrayPatience(t *testing.T) {
	tests := []struct {
		name        string
		utilization string // the /healthz header; "" for none
		notReadyAt  time.Duration
	}{
		{name: "spare capacity: a gray failure", utilization: "0.300", notReadyAt: 200 * time.Millisecond},
		{name: "busy: queued behind its own requests", utilization: "0.970", notReadyAt: time.Second},
		{name: "no emulated capacity", notReadyAt: time.Second},
		{name: "just below busy", utilization: "0.899", notReadyAt: 200 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			health := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				if tt.utilization != "" {
					w.Header().Set(metrics.UtilizationHeader, tt.utilization)
				}
			}))
			defer health.Close()
			reported := newUtilizations()
			h := NewHTTPProber(map[string]string{"n": health.Listener.Addr().String()}, time.Second, time.Hour)
			h.reported = reported
			p, err := NewPingProber("127.0.0.1:0", map[string]netip.AddrPort{"n": pongEndpoint(t, false)},
				20*time.Millisecond, time.Second, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			p.gray = grayFailure{patience: 200 * time.Millisecond, reported: reported}
			now := time.Unix(1000, 0)
			p.patience.now = func() time.Time { return now }
			if !h.Ready(context.Background(), "n") {
				t.Fatal("the member's /healthz is not Ready")
			}
			if !p.Ready(context.Background(), "n") {
				t.Fatal("not Ready at the first unanswered PING")
			}
			now = now.Add(tt.notReadyAt - time.Millisecond)
			if !p.Ready(context.Background(), "n") {
				t.Fatalf("not Ready after %v of unanswered PINGs", tt.notReadyAt-time.Millisecond)
			}
			now = now.Add(time.Millisecond)
			if p.Ready(context.Background(), "n") {
				t.Fatalf("still Ready after %v of unanswered PINGs", tt.notReadyAt)
			}
		})
	}
}
