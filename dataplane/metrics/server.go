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

// Server serves /metrics and /healthz on its own port.
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
}

// Status is what GET /status answers, as JSON: the process's view of the
// cluster that its operator reads (the map version it applied).
type Status struct {
	// MapVersion is the partition map version the process uses.
	MapVersion int64 `json:"mapVersion"`
}

// StatusPath is where the server answers Status (WithStatus).
const StatusPath = "/status"

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
		mux.HandleFunc("GET "+StatusPath, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(cfg.status())
		})
	}
	s := &Server{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, ln: ln}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
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
