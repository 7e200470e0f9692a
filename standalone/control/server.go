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
	// Kill kills process name and holds it down; Restart starts it again.
	Kill(name string) error
	Restart(name string) error
	// Pause stops process name (SIGSTOP) until Resume, which is a no-op
	// for a process that is not paused.
	Pause(name string) error
	Resume(name string) error
	// Slow delays every datagram process name's data-plane socket sends by
	// delay until Unslow, which is a no-op for a process that is not
	// slowed.
	Slow(name string, delay time.Duration) error
	Unslow(name string) error
	// Shutdown starts stopping the cluster; it returns at once.
	Shutdown()
}

// ErrNotFound is what a Backend wraps for an unknown process; the server
// answers it with 404.
var ErrNotFound = errors.New("not found")

// ErrBadRequest is wrapped for a malformed request; the server answers it
// with 400.
var ErrBadRequest = errors.New("bad request")

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
	s := &Server{path: path, srv: &http.Server{Handler: newHandler(b), ReadHeaderTimeout: 5 * time.Second}}
	go func() {
		if err := s.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("control API stopped", "err", err)
		}
	}()
	return s, nil
}

// newHandler routes the control API's requests to b.
func newHandler(b Backend) http.Handler {
	mux := http.NewServeMux()
	// Anything else is no endpoint of the API, answered in its own form.
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		reply(w, nil, fmt.Errorf("cannot serve %s %q: no such endpoint: %w", r.Method, r.URL.Path, ErrNotFound))
	})
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
	mux.HandleFunc("POST /v1/processes/{name}/pause", func(w http.ResponseWriter, r *http.Request) {
		reply(w, struct{}{}, b.Pause(r.PathValue("name")))
	})
	mux.HandleFunc("POST /v1/processes/{name}/resume", func(w http.ResponseWriter, r *http.Request) {
		reply(w, struct{}{}, b.Resume(r.PathValue("name")))
	})
	mux.HandleFunc("POST /v1/processes/{name}/slow", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		delay, err := parseDelay(r.URL.Query().Get("delay"))
		if err != nil {
			reply(w, nil, fmt.Errorf("cannot slow %s: %w", name, err))
			return
		}
		reply(w, struct{}{}, b.Slow(name, delay))
	})
	mux.HandleFunc("POST /v1/processes/{name}/unslow", func(w http.ResponseWriter, r *http.Request) {
		reply(w, struct{}{}, b.Unslow(r.PathValue("name")))
	})
	mux.HandleFunc("POST /v1/shutdown", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, struct{}{}, nil)
		b.Shutdown()
	})
	return mux
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

// parseDelay parses the delay parameter of a slow request: a positive Go
// duration.
func parseDelay(s string) (time.Duration, error) {
	if s == "" {
		return 0, fmt.Errorf("no delay parameter (e.g. ?delay=100ms): %w", ErrBadRequest)
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("delay %q is not a positive duration (e.g. 100ms): %w", s, ErrBadRequest)
	}
	return d, nil
}

func reply(w http.ResponseWriter, v any, err error) {
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		code := http.StatusInternalServerError
		switch {
		case errors.Is(err, ErrNotFound):
			code = http.StatusNotFound
		case errors.Is(err, ErrBadRequest):
			code = http.StatusBadRequest
		}
		w.WriteHeader(code)
		v = apiError{Error: err.Error()}
	}
	_ = json.NewEncoder(w).Encode(v)
}
