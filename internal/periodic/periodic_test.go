package periodic_test

import (
	"context"
	"testing"
	"time"

	"github.com/distcache/distcache/internal/periodic"
)

func TestRunStopsWhenFnSays(t *testing.T) {
	calls := 0
	periodic.Run(t.Context(), time.Millisecond, func(context.Context) bool {
		calls++
		return calls < 3
	})
	if calls != 3 {
		t.Fatalf("%d calls, want 3 (the third said stop)", calls)
	}
}

func TestRunStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	calls := 0
	periodic.Run(ctx, time.Millisecond, func(context.Context) bool {
		calls++
		if calls == 2 {
			cancel()
		}
		return true
	})
	if calls != 2 {
		t.Fatalf("%d calls, want 2 (the context ended in the second)", calls)
	}
}
