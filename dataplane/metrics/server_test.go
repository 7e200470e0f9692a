package metrics

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/distcache/distcache/internal/testing/httpget"
)

func TestHealthzUtilization(t *testing.T) {
	tests := []struct {
		name       string
		healthy    func() error
		opts       []ServerOption
		wantStatus int
		wantHeader string
	}{
		{name: "without a reporter", wantStatus: http.StatusOK},
		{name: "reported", opts: []ServerOption{WithUtilization(func() (float64, bool) { return 0.4217, true })},
			wantStatus: http.StatusOK, wantHeader: "0.422"},
		{name: "nothing to report", opts: []ServerOption{WithUtilization(func() (float64, bool) { return 0, false })},
			wantStatus: http.StatusOK},
		{name: "unhealthy: no utilization", healthy: func() error { return errors.New("closing") },
			opts:       []ServerOption{WithUtilization(func() (float64, bool) { return 1, true })},
			wantStatus: http.StatusServiceUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Listen("127.0.0.1:0", prometheus.NewRegistry(), tt.healthy, tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close(context.Background()) })
			resp, err := httpget.Get(t.Context(), "http://"+s.Addr()+"/healthz")
			if err != nil {
				t.Fatal(err)
			}
			if resp.Status != tt.wantStatus {
				t.Errorf("status %d, want %d", resp.Status, tt.wantStatus)
			}
			if got := resp.Header.Get(UtilizationHeader); got != tt.wantHeader {
				t.Errorf("%s: %q, want %q", UtilizationHeader, got, tt.wantHeader)
			}
		})
	}
}

// TestHotKeysEndpoint: GET /hotkeys answers the reporter's keys as JSON,
// binary keys in base64, and a server without a reporter has no such
// endpoint.
func TestHotKeysEndpoint(t *testing.T) {
	hot := HotKeys{Interval: 1.5, Keys: []KeyCount{{Key: []byte{0, 'k'}, Reads: 7, Writes: 2}, {Key: []byte("r"), Reads: 3}}}
	s, err := Listen("127.0.0.1:0", prometheus.NewRegistry(), nil, WithHotKeys(func() HotKeys { return hot }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	resp, err := httpget.Get(t.Context(), "http://"+s.Addr()+HotKeysPath)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"interval":1.5,"keys":[{"key":"AGs=","reads":7,"writes":2},{"key":"cg==","reads":3}]}` + "\n"
	if resp.Status != http.StatusOK || resp.Body != want {
		t.Fatalf("GET %s: %d %q, want 200 %q", HotKeysPath, resp.Status, resp.Body, want)
	}

	bare, err := Listen("127.0.0.1:0", prometheus.NewRegistry(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bare.Close(context.Background()) })
	resp, err = httpget.Get(t.Context(), "http://"+bare.Addr()+HotKeysPath)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != http.StatusNotFound {
		t.Fatalf("GET %s without a reporter: %d, want 404", HotKeysPath, resp.Status)
	}
}

// TestGetJSON reads a server's endpoints as the control loop, the operator
// and the benchmark do: an answer is decoded, a longer one than the limit
// is an error, and so is a missing endpoint.
func TestGetJSON(t *testing.T) {
	hot := HotKeys{Interval: 1, Keys: []KeyCount{{Key: []byte("k"), Reads: 3}}}
	s, err := Listen("127.0.0.1:0", prometheus.NewRegistry(), nil, WithHotKeys(func() HotKeys { return hot }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	var got HotKeys
	if err := GetJSON(t.Context(), http.DefaultClient, s.Addr(), HotKeysPath, MaxHotKeysAnswer, &got); err != nil || len(got.Keys) != 1 || got.Keys[0].Reads != 3 {
		t.Fatalf("GetJSON = %+v, %v", got, err)
	}
	if err := GetJSON(t.Context(), http.DefaultClient, s.Addr(), HotKeysPath, 10, &got); err == nil || !strings.Contains(err.Error(), "cannot decode") {
		t.Errorf("an answer over the limit: %v, want a decoding error", err)
	}
	if err := GetJSON(t.Context(), http.DefaultClient, s.Addr(), WorkPath, MaxSmallAnswer, &Work{}); err == nil || !strings.Contains(err.Error(), "HTTP 404") {
		t.Errorf("a missing endpoint: %v, want HTTP 404", err)
	}
}

// TestMissRatioCurveEndpoint: GET /mrc answers the reporter's curve as
// JSON, which GetJSON reads back within MaxMissRatioCurveAnswer, and a
// server without a reporter has no such endpoint.
func TestMissRatioCurveEndpoint(t *testing.T) {
	curve := MissRatioCurve{Window: 30, Requests: 1000, Hits: 640, Entries: 4,
		Points: []CurvePoint{{Entries: 1, MissRatio: 0.9}, {Entries: 4, MissRatio: 0.25}, {Entries: 16, MissRatio: 0.125}}}
	tests := []struct {
		name       string
		opts       []ServerOption
		wantStatus int
		wantBody   string
	}{
		{name: "reported", opts: []ServerOption{WithMissRatioCurve(func() MissRatioCurve { return curve })},
			wantStatus: http.StatusOK,
			wantBody: `{"window":30,"requests":1000,"hits":640,"entries":4,"points":[` +
				`{"entries":1,"missRatio":0.9},{"entries":4,"missRatio":0.25},{"entries":16,"missRatio":0.125}]}` + "\n"},
		{name: "without a reporter", wantStatus: http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Listen("127.0.0.1:0", prometheus.NewRegistry(), nil, tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close(context.Background()) })
			resp, err := httpget.Get(t.Context(), "http://"+s.Addr()+MissRatioCurvePath)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Status != tt.wantStatus || (tt.wantBody != "" && resp.Body != tt.wantBody) {
				t.Fatalf("GET %s: %d %q, want %d %q", MissRatioCurvePath, resp.Status, resp.Body, tt.wantStatus, tt.wantBody)
			}
			if tt.wantStatus != http.StatusOK {
				return
			}
			var got MissRatioCurve
			if err := GetJSON(t.Context(), http.DefaultClient, s.Addr(), MissRatioCurvePath, MaxMissRatioCurveAnswer, &got); err != nil || !reflect.DeepEqual(got, curve) {
				t.Fatalf("GetJSON = %+v, %v, want %+v", got, err, curve)
			}
		})
	}
}
