package gateway

import (
	"context"
	"testing"
)

// TestAdmission checks that commands are admitted all at once or not at
// all: a pipeline admitted a part at a time went out as a few small
// requests each.
func TestAdmission(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		held    int // admitted before, of a bound of 32
		want    int // asked
		ctx     context.Context
		granted int
	}{
		{name: "all free", want: 16, ctx: context.Background(), granted: 16},
		{name: "more than the bound gets the bound", want: 40, ctx: context.Background(), granted: 32},
		{name: "room for all", held: 16, want: 16, ctx: ended, granted: 16},
		{name: "room for a part waits for all", held: 20, want: 16, ctx: ended, granted: 0},
		{name: "no room", held: 32, want: 1, ctx: ended, granted: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAdmission(32)
			if tt.held > 0 && a.acquire(context.Background(), tt.held) != tt.held {
				t.Fatalf("cannot hold %d", tt.held)
			}
			if got := a.acquire(tt.ctx, tt.want); got != tt.granted {
				t.Errorf("acquire(%d) with %d of 32 held = %d, want %d", tt.want, tt.held, got, tt.granted)
			}
			if want := int64(tt.held + tt.granted); a.running.Load() != want {
				t.Errorf("running = %d, want %d", a.running.Load(), want)
			}
			a.release(tt.held + tt.granted)
			if got := a.acquire(context.Background(), 32); got != 32 {
				t.Errorf("after release, acquire(32) = %d, want 32", got)
			}
		})
	}
}
