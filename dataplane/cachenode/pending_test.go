package cachenode

import (
	"strconv"
	"testing"
	"time"
)

func TestPendingWrites(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tests := []struct {
		name string
		do   func(p *pendingWrites)
		at   time.Time
		want bool
	}{
		{"nothing pending", func(*pendingWrites) {}, t0, false},
		{"phase 1 only", func(p *pendingWrites) { p.begin("k", 5, t0) }, t0, true},
		{"phase 2 of the same write", func(p *pendingWrites) { p.begin("k", 5, t0); p.end([]byte("k"), 5) }, t0, false},
		{"late phase 2 of an older write", func(p *pendingWrites) {
			p.begin("k", 5, t0)
			p.begin("k", 7, t0)
			p.end([]byte("k"), 5)
		}, t0, true},
		{"older phase 1 after a newer one keeps the newer", func(p *pendingWrites) {
			p.begin("k", 7, t0)
			p.begin("k", 5, t0)
			p.end([]byte("k"), 5)
		}, t0, true},
		{"other key", func(p *pendingWrites) { p.begin("other", 5, t0) }, t0, false},
		{"expired: the write is over either way", func(p *pendingWrites) { p.begin("k", 5, t0) }, t0.Add(pendingTTL), false},
		{"saturated table coalesces nothing", func(p *pendingWrites) {
			for i := range pendingCap {
				p.begin(strconv.Itoa(i), 1, t0)
			}
		}, t0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPendingWrites()
			tt.do(&p)
			if got := p.active("k", tt.at); got != tt.want {
				t.Fatalf("active = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPendingWritesPruneWhenFull(t *testing.T) {
	t0 := time.Unix(1000, 0)
	p := newPendingWrites()
	for i := range pendingCap {
		p.begin(strconv.Itoa(i), 1, t0)
	}
	p.begin("k", 1, t0.Add(pendingTTL)) // prunes every expired entry first
	if len(p.m) != 1 || !p.active("k", t0.Add(pendingTTL)) {
		t.Fatalf("after pruning: %d entries, k active %v; want only k", len(p.m), p.active("k", t0.Add(pendingTTL)))
	}
}
