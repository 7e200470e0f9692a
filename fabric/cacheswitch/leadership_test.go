package cacheswitch

import (
	"context"
	"errors"
	"testing"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestLeadershipPromotion(t *testing.T) {
	tests := []struct {
		name         string
		start        bool
		set          []bool
		wantLeader   bool
		wantPromoted bool // the channel Leading gave before the calls closed
	}{
		{name: "backup stays backup", start: false, set: []bool{false}, wantLeader: false, wantPromoted: false},
		{name: "backup promoted", start: false, set: []bool{true}, wantLeader: true, wantPromoted: true},
		{name: "leader told again", start: true, set: []bool{true}, wantLeader: true, wantPromoted: false},
		{name: "leader demoted", start: true, set: []bool{false}, wantLeader: false, wantPromoted: false},
		{name: "leader demoted and promoted", start: true, set: []bool{false, true}, wantLeader: true, wantPromoted: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLeadership(tt.start)
			_, promoted := l.Leading()
			for _, leader := range tt.set {
				l.SetLeader(leader)
			}
			leader, next := l.Leading()
			if leader != tt.wantLeader {
				t.Errorf("leader = %v, want %v", leader, tt.wantLeader)
			}
			if got := closed(promoted); got != tt.wantPromoted {
				t.Errorf("promoted closed = %v, want %v", got, tt.wantPromoted)
			}
			if closed(next) {
				t.Error("the channel for the next promotion is closed already")
			}
		})
	}
}

func TestLeadershipAwait(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if err := NewLeadership(true).Await(ended); err != nil {
		t.Errorf("a leader's Await = %v, want nil", err)
	}
	if err := NewLeadership(false).Await(ended); !errors.Is(err, context.Canceled) {
		t.Errorf("a backup's Await with an ended context = %v, want %v", err, context.Canceled)
	}

	l := NewLeadership(false)
	done := make(chan error, 1)
	go func() { done <- l.Await(context.Background()) }()
	l.SetLeader(true)
	if err := <-done; err != nil {
		t.Errorf("Await after promotion = %v, want nil", err)
	}
}
