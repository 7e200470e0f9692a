package control

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/distcache/distcache/internal/testing/errtest"
)

// fakeBackend records the process requests it gets; the process "nobody"
// does not exist and "broken" fails.
type fakeBackend struct {
	mu    sync.Mutex // guards calls
	calls []string
}

func (f *fakeBackend) call(format string, args ...any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := fmt.Sprintf(format, args...)
	f.calls = append(f.calls, c)
	switch args[0] {
	case "nobody":
		return fmt.Errorf("cannot find process nobody: %w", ErrNotFound)
	case "broken":
		return errors.New("cannot do it: broken")
	}
	return nil
}

func (f *fakeBackend) Status(context.Context) Status           { return Status{Cluster: "fake"} }
func (f *fakeBackend) Work(context.Context) ([]Process, error) { return nil, nil }
func (f *fakeBackend) Kill(name string) error                  { return f.call("kill %s", name) }
func (f *fakeBackend) Restart(name string) error               { return f.call("restart %s", name) }
func (f *fakeBackend) Pause(name string) error                 { return f.call("pause %s", name) }
func (f *fakeBackend) Resume(name string) error                { return f.call("resume %s", name) }
func (f *fakeBackend) Slow(name string, delay time.Duration) error {
	return f.call("slow %s %v", name, delay)
}
func (f *fakeBackend) Unslow(name string) error { return f.call("unslow %s", name) }
func (f *fakeBackend) Shutdown()                {}

func (f *fakeBackend) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

// TestProcessRequests sends every process request through a client to a
// server in front of a fake backend, and checks what the backend was asked
// and which errors came back.
func TestProcessRequests(t *testing.T) {
	fake := &fakeBackend{}
	runDir := t.TempDir()
	srv, err := Listen(runDir, fake, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close(context.Background()) })
	c := Dial(runDir)
	tests := []struct {
		name      string
		do        func(ctx context.Context) error
		wantCalls []string
		wantErr   error // nil: none; errtest.ErrAny: any
	}{
		{"kill", func(ctx context.Context) error { return c.Kill(ctx, "n1") }, []string{"kill n1"}, nil},
		{"restart", func(ctx context.Context) error { return c.Restart(ctx, "n1") }, []string{"restart n1"}, nil},
		{"pause", func(ctx context.Context) error { return c.Pause(ctx, "n1") }, []string{"pause n1"}, nil},
		{"resume", func(ctx context.Context) error { return c.Resume(ctx, "n1") }, []string{"resume n1"}, nil},
		{"slow", func(ctx context.Context) error { return c.Slow(ctx, "n1", 100*time.Millisecond) },
			[]string{"slow n1 100ms"}, nil},
		{"slow an escaped name", func(ctx context.Context) error { return c.Slow(ctx, "n 1", 1500*time.Microsecond) },
			[]string{"slow n 1 1.5ms"}, nil},
		{"unslow", func(ctx context.Context) error { return c.Unslow(ctx, "n1") }, []string{"unslow n1"}, nil},
		{"pause unknown", func(ctx context.Context) error { return c.Pause(ctx, "nobody") },
			[]string{"pause nobody"}, ErrNotFound},
		{"slow unknown", func(ctx context.Context) error { return c.Slow(ctx, "nobody", time.Second) },
			[]string{"slow nobody 1s"}, ErrNotFound},
		{"resume fails", func(ctx context.Context) error { return c.Resume(ctx, "broken") },
			[]string{"resume broken"}, errtest.ErrAny},
		{"unslow fails", func(ctx context.Context) error { return c.Unslow(ctx, "broken") },
			[]string{"unslow broken"}, errtest.ErrAny},
		{"slow without a delay", func(ctx context.Context) error {
			return c.do(ctx, http.MethodPost, "/v1/processes/n1/slow", nil)
		}, nil, ErrBadRequest},
		{"slow by no time", func(ctx context.Context) error { return c.Slow(ctx, "n1", 0) }, nil, ErrBadRequest},
		{"slow by a malformed delay", func(ctx context.Context) error {
			return c.do(ctx, http.MethodPost, "/v1/processes/n1/slow?delay=soon", nil)
		}, nil, ErrBadRequest},
		{"pause with GET", func(ctx context.Context) error {
			return c.do(ctx, http.MethodGet, "/v1/processes/n1/pause", nil)
		}, nil, errtest.ErrAny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.do(t.Context())
			errtest.Check(t, err, tt.wantErr)
			if calls := fake.take(); !slices.Equal(calls, tt.wantCalls) {
				t.Fatalf("backend calls %q, want %q", calls, tt.wantCalls)
			}
		})
	}
}
