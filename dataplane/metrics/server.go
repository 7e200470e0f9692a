package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server serves /metrics and /healthz on its own port, and /status, /work,
// /hotkeys and /mrc when asked to (WithStatus, WithWork, WithHotKeys,
// WithMissRatioCurve).
type Server struct {
	srv *http.Server
	ln  net.Listener
}

// UtilizationHeader is the /healthz response header that carries the
// fraction of its emulated capacity a process used recently (WithUtilization),
// as a decimal: a health checker tells a busy process (about 1) from a slow
// one by it.
const UtilizationHeader = "Distcache-Utilization"

// ServerOption configures a Server.
type ServerOption func(*serverConfig)

type serverConfig struct {
	utilization func() (float64, bool)
	status      func() Status
	work        func() Work
	hotKeys     func() HotKeys
	curve       func() MissRatioCurve
}

// Status is what GET /status answers, as JSON: the process's view of the
// cluster that its operator reads (the map version it applied).
type Status struct {
	// MapVersion is the partition map version the process uses.
	MapVersion int64 `json:"mapVersion"`
}

// StatusPath is where the server answers Status (WithStatus).
const StatusPath = "/status"

// Work is what GET /work answers, as JSON: the work a shim or cache node
// has done against its emulated capacity, which `distcache bench` reads
// from every process four times a second. It costs the process about
// 0.05 ms of CPU; the same counters through /metrics, filtered, about
// 2 ms, as every metric is gathered first.
type Work struct {
	// Units is distcache_work_units_total: the work units taken.
	Units uint64 `json:"units"`
	// Capacity is distcache_work_capacity: the emulated capacity in
	// units per second (0: unlimited).
	Capacity float64 `json:"capacity"`
	// Coherence is the INVALIDATE and UPDATE calls a shim has sent (0
	// for a cache node).
	Coherence uint64 `json:"coherence"`
}

// HotKeys is what GET /hotkeys answers, as JSON: the keys a process served
// most in its last complete counting interval — a cache node the hits of
// the keys it caches, a storage shim the reads it served and the writes it
// applied — which the control loop reads to decide each hot key's copies
// (package placement/copies).
type HotKeys struct {
	// Interval is the length of the interval counted, in seconds (0 until
	// the first one ends).
	Interval float64 `json:"interval"`
	// Keys lists the keys, most counted first.
	Keys []KeyCount `json:"keys"`
}

// KeyCount is one key's operations in a HotKeys interval.
type KeyCount struct {
	// Key is the key (base64 in JSON).
	Key    []byte `json:"key"`
	Reads  uint64 `json:"reads"`
	Writes uint64 `json:"writes,omitempty"`
}

// HotKeysPath is where the server answers HotKeys (WithHotKeys).
const HotKeysPath = "/hotkeys"

// WithHotKeys serves hot()'s answer at HotKeysPath.
func WithHotKeys(hot func() HotKeys) ServerOption {
	return func(c *serverConfig) { c.hotKeys = hot }
}

// WithMissRatioCurve serves curve()'s answer at MissRatioCurvePath.
func WithMissRatioCurve(curve func() MissRatioCurve) ServerOption {
	return func(c *serverConfig) { c.curve = curve }
}

// WorkPath is where the server answers Work (WithWork).
const WorkPath = "/work"

// WithWork serves work()'s answer at WorkPath.
func WithWork(work func() Work) ServerOption {
	return func(c *serverConfig) { c.work = work }
}

// WithStatus serves status()'s answer at StatusPath.
func WithStatus(status func() Status) ServerOption {
	return func(c *serverConfig) { c.status = status }
}

// WithUtilization makes every healthy /healthz answer carry u's value in
// UtilizationHeader, when u reports one.
func WithUtilization(u func() (float64, bool)) ServerOption {
	return func(c *serverConfig) { c.utilization = u }
}

// Listen binds addr ("127.0.0.1:0" picks a port) and serves reg's metrics
// until Close. healthy reports liveness for /healthz (nil: always healthy).
func Listen(addr string, reg *prometheus.Registry, healthy func() error, opts ...ServerOption) (*Server, error) {
	var cfg serverConfig
	for _, o := range opts {
		o(&cfg)
	}
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen for metrics on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if healthy != nil {
			if err := healthy(); err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		if cfg.utilization != nil {
			if u, ok := cfg.utilization(); ok {
				w.Header().Set(UtilizationHeader, strconv.FormatFloat(u, 'f', 3, 64))
			}
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	if cfg.status != nil {
		mux.HandleFunc("GET "+StatusPath, serveJSON(cfg.status))
	}
	if cfg.work != nil {
		mux.HandleFunc("GET "+WorkPath, serveJSON(cfg.work))
	}
	if cfg.hotKeys != nil {
		mux.HandleFunc("GET "+HotKeysPath, serveJSON(cfg.hotKeys))
	}
	if cfg.curve != nil {
		mux.HandleFunc("GET "+MissRatioCurvePath, serveJSON(cfg.curve))
	}
	s := &Server{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, ln: ln}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// serveJSON answers with v()'s value as JSON.
func serveJSON[T any](v func() T) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v())
	}
}

// Addr is the bound address.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server.
func (s *Server) Close(ctx context.Context) error {
	if err := s.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("cannot stop metrics server: %w", err)
	}
	return nil
}
