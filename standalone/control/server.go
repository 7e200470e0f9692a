package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"
)

// Backend is the running cluster the server exposes.
type Backend interface {
	Status(ctx context.Context) Status
	// Work scrapes every shim's and node's load now.
	Work(ctx context.Context) ([]Process, error)
	Kill(name string) error
	Restart(name string) error
	// Shutdown starts stopping the cluster; it returns at once.
	Shutdown()
}

// ErrNotFound is what a Backend wraps for an unknown process; the server
// answers it with 404.
var ErrNotFound = errors.New("not found")

// Server serves the control API on a Unix socket.
type Server struct {
	srv  *http.Server
	path string
}

// Listen serves b on the socket in runDir. A stale socket (no one
// answering) is replaced; a live one is an error.
func Listen(runDir string, b Backend, log *slog.Logger) (*Server, error) {
	path := SocketPath(runDir)
	if _, err := os.Stat(path); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, serr := Dial(runDir).Status(ctx)
		cancel()
		if serr == nil {
			return nil, fmt.Errorf("cannot serve the control API: a cluster is already running in %s", runDir)
		}
		_ = os.Remove(path)
	}
	var lc net.ListenConfig
	l, err := lc.Listen(context.Background(), "unix", path)
	if err != nil {
		return nil, fmt.Errorf("cannot serve the control API: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) {
		reply(w, b.Status(r.Context()), nil)
	})
	mux.HandleFunc("GET /v1/work", func(w http.ResponseWriter, r *http.Request) {
		work, err := b.Work(r.Context())
		reply(w, work, err)
	})
	mux.HandleFunc("POST /v1/processes/{name}/kill", func(w http.ResponseWriter, r *http.Request) {
		reply(w, struct{}{}, b.Kill(r.PathValue("name")))
	})
	mux.HandleFunc("POST /v1/processes/{name}/restart", func(w http.ResponseWriter, r *http.Request) {
		reply(w, struct{}{}, b.Restart(r.PathValue("name")))
	})
	mux.HandleFunc("POST /v1/shutdown", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, struct{}{}, nil)
		b.Shutdown()
	})
	s := &Server{path: path, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}}
	go func() {
		if err := s.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("control API stopped", "err", err)
		}
	}()
	return s, nil
}

// Close stops serving and removes the socket.
func (s *Server) Close(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	_ = os.Remove(s.path)
	return err
}

// apiError is the body of a failed request.
type apiError struct {
	Error string `json:"error"`
}

func reply(w http.ResponseWriter, v any, err error) {
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, ErrNotFound) {
			code = http.StatusNotFound
		}
		w.WriteHeader(code)
		v = apiError{Error: err.Error()}
	}
	_ = json.NewEncoder(w).Encode(v)
}
