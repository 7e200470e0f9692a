package driver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/distcache/distcache/client"
)

func TestOutcome(t *testing.T) {
	tests := []struct {
		err  error
		want writeOutcome
	}{
		{nil, applied},
		{fmt.Errorf("cannot put: %w", client.ErrCoherence), notApplied},
		{fmt.Errorf("cannot put: %w", client.ErrOverloaded), notApplied},
		{fmt.Errorf("cannot put: %w", client.ErrTooLarge), notApplied},
		{fmt.Errorf("cannot put: %w: %w", client.ErrOutcomeUnknown, context.DeadlineExceeded), unknownOutcome},
		{fmt.Errorf("cannot put: %w", client.ErrUnavailable), unknownOutcome},
		{fmt.Errorf("cannot put: %w", client.ErrInternal), unknownOutcome},
		{context.Canceled, unknownOutcome},
	}
	for _, tt := range tests {
		if got := outcome(tt.err); got != tt.want {
			t.Errorf("outcome(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// TestLedgerAccepts checks which values a key may hold after a history of
// writes, each value "v<i>" with its error.
func TestLedgerAccepts(t *testing.T) {
	timeout := fmt.Errorf("%w: %w", client.ErrOutcomeUnknown, context.DeadlineExceeded)
	tests := []struct {
		name   string
		writes []error // write i of value v<i> returned writes[i]
		ok     []string
		lost   []string // "" = not found
	}{
		{name: "acknowledged", writes: []error{nil, nil}, ok: []string{"v1"}, lost: []string{"v0", "", "x"}},
		{name: "refused after acknowledged", writes: []error{nil, client.ErrCoherence}, ok: []string{"v0"}, lost: []string{"v1", ""}},
		{name: "unknown after acknowledged", writes: []error{nil, timeout}, ok: []string{"v0", "v1"}, lost: []string{""}},
		{name: "unknown before acknowledged: may land later", writes: []error{timeout, nil}, ok: []string{"v0", "v1"}, lost: []string{"", "x"}},
		{name: "never acknowledged: nothing to lose", writes: []error{timeout, client.ErrCoherence}, ok: []string{"v0", "v1", "", "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLedger()
			for i, err := range tt.writes {
				got := l.write(t.Context(), "k", fmt.Appendf(nil, "v%d", i), func() error { return err })
				if !errors.Is(got, err) {
					t.Fatalf("write %d returned %v, want %v", i, got, err)
				}
			}
			e := l.entry("k")
			for _, v := range tt.ok {
				if !e.accepts([]byte(v), v != "") {
					t.Errorf("%q refused", v)
				}
			}
			for _, v := range tt.lost {
				if e.accepts([]byte(v), v != "") {
					t.Errorf("%q accepted", v)
				}
			}
			wantKeys := []string{"k"}
			if !slices.Contains(tt.writes, nil) {
				wantKeys = []string{}
			}
			if got := l.acknowledged(); !slices.Equal(got, wantKeys) {
				t.Errorf("acknowledged keys %q, want %q", got, wantKeys)
			}
		})
	}
}

func TestValue(t *testing.T) {
	tests := []struct {
		mode     Mode
		key      string
		seq      uint64
		size     int
		want     string
		describe string
	}{
		{DistCache, "key:7", 42, 24, "distcache|key:7|42|.....", "distcache|key:7|42"},
		{NoCache, "key:123456", 9, 4, "nocache|key:123456|9|", "nocache|key:123456|9"},
	}
	for _, tt := range tests {
		v := value(tt.mode, tt.key, tt.seq, tt.size)
		if string(v) != tt.want || len(v) != max(tt.size, len(tt.want)) {
			t.Errorf("value(%s, %s, %d, %d) = %q, want %q", tt.mode, tt.key, tt.seq, tt.size, v, tt.want)
		}
		if got := describe(v); got != tt.describe {
			t.Errorf("describe(%q) = %q, want %q", v, got, tt.describe)
		}
	}
	if got := describe([]byte("planted")); got != `"planted"` {
		t.Errorf("describe of a foreign value = %s", got)
	}
}

// TestLedgerOneWriteInFlight checks that a second write of a key waits for
// the first, and gives up without sending when its context ends first.
func TestLedgerOneWriteInFlight(t *testing.T) {
	l := newLedger()
	started, release := make(chan struct{}), make(chan struct{})
	first := make(chan error)
	go func() {
		first <- l.write(t.Context(), "k", []byte("v0"), func() error {
			close(started)
			<-release
			return nil
		})
	}()
	<-started
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	called := false
	err := l.write(ctx, "k", []byte("v1"), func() error { called = true; return nil })
	if !errors.Is(err, errKeyBusy) || called {
		t.Fatalf("second write: %v, put called %v; want errKeyBusy, not called", err, called)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := l.write(t.Context(), "k", []byte("v2"), func() error { return nil }); err != nil {
		t.Fatalf("write after the first finished: %v", err)
	}
	if e := l.entry("k"); !e.accepts([]byte("v2"), true) || e.accepts([]byte("v0"), true) || e.attempts != 2 {
		t.Errorf("entry %+v after v0 then v2 acknowledged", e)
	}
}
