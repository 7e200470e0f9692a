package controlloop

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
)

// pongEndpoint is a TEST stand-in for a cache node's data plane: a real
// UDP endpoint that answers PING like the node does (dataplane/cachenode
// tests the node's own answer), or stays silent like a paused one.
func pongEndpoint(t *testing.T, answer bool) netip.AddrPort {
	t.Helper()
	ep, err := transport.Listen(transport.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ep.Start(func(out transport.Sender, src netip.AddrPort, req *wire.Message) {
		if !answer || req.Op != wire.OpPing {
			return
		}
		req.Op, req.Status = wire.OpPong, wire.StatusOK
		_ = out.Send(src, req)
	})
	t.Cleanup(func() { _ = ep.Close() })
	return ep.Addr()
}

func TestPingProber(t *testing.T) {
	addrs := map[string]netip.AddrPort{"up": pongEndpoint(t, true), "paused": pongEndpoint(t, false)}
	p, err := NewPingProber("127.0.0.1:0", addrs, 200*time.Millisecond, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	tests := []struct {
		member string
		want   bool
	}{
		{"up", true},
		{"paused", false},
		{"unknown", true}, // left to the other probers
	}
	for _, tt := range tests {
		if got := p.Ready(context.Background(), tt.member); got != tt.want {
			t.Errorf("Ready(%s) = %v, want %v", tt.member, got, tt.want)
		}
	}
	all := AllProbers{p, staticProber(true)}
	if !all.Ready(context.Background(), "up") || all.Ready(context.Background(), "paused") {
		t.Error("AllProbers is not the conjunction of its probers")
	}
}

// staticProber answers the same for every member.
type staticProber bool

func (s staticProber) Ready(context.Context, string) bool { return bool(s) }

// TestPingProberPatience checks that a member whose PINGs fail is Ready
// until they have failed for the patience, and at once again when one is
// answered.
func TestPingProberPatience(t *testing.T) {
	addr := pongEndpoint(t, true)
	silent := pongEndpoint(t, false)
	p, err := NewPingProber("127.0.0.1:0", map[string]netip.AddrPort{"n": addr}, 200*time.Millisecond, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	now := time.Unix(1000, 0)
	p.patience.now = func() time.Time { return now }
	steps := []struct {
		answer  bool
		advance time.Duration
		want    bool
	}{
		{answer: false, want: true},                                  // first failure
		{answer: false, advance: 999 * time.Millisecond, want: true}, // still within patience
		{answer: false, advance: time.Millisecond, want: false},      // failing for the patience
		{answer: true, want: true},                                   // answered: Ready at once
		{answer: false, advance: time.Hour, want: true},              // a new run of failures starts
	}
	for i, st := range steps {
		now = now.Add(st.advance)
		if st.answer {
			p.addrs["n"] = addr
		} else {
			p.addrs["n"] = silent
		}
		if got := p.Ready(context.Background(), "n"); got != st.want {
			t.Fatalf("step %d: Ready = %v, want %v", i, got, st.want)
		}
	}
}

// TestHTTPProberOutcomes checks that a refused connection or an unhealthy
// status is not Ready at once, while a check left unanswered is Ready until
// the patience has run out.
func TestHTTPProberOutcomes(t *testing.T) {
	healthy := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer healthy.Close()
	sick := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	defer sick.Close()
	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hung.Close()
	defer close(release)
	closed := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	closedAddr := closed.Listener.Addr().String()
	closed.Close()

	addr := func(s *httptest.Server) string { return s.Listener.Addr().String() }
	p := NewHTTPProber(map[string]string{"healthy": addr(healthy), "sick": addr(sick), "hung": addr(hung), "dead": closedAddr},
		50*time.Millisecond, time.Hour)
	now := time.Unix(1000, 0)
	p.patience.now = func() time.Time { return now }
	tests := []struct {
		member string
		want   bool
	}{
		{"healthy", true},
		{"sick", false},
		{"dead", false},
		{"hung", true}, // unanswered, within the patience
		{"unknown", false},
	}
	for _, tt := range tests {
		if got := p.Ready(context.Background(), tt.member); got != tt.want {
			t.Errorf("Ready(%s) = %v, want %v", tt.member, got, tt.want)
		}
	}
	// A check cut short by the caller (AllProbers, when another prober
	// said not Ready) is no verdict: it neither ends nor restarts the run
	// of unanswered checks.
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if p.Ready(cancelled, "hung") {
		t.Error("a check cut short by the caller says Ready")
	}
	now = now.Add(time.Hour)
	if p.Ready(context.Background(), "hung") {
		t.Error("a member unanswered for the patience is still Ready")
	}
}
