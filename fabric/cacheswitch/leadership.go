package cacheswitch

import (
	"context"
	"sync"
)

// Leadership says whether a runner is its fleet's leader, and tells when
// it becomes the leader (Runner, clientleaf.Runner). It is safe for
// concurrent use.
type Leadership struct {
	mu       sync.Mutex    // guards leader, promoted
	leader   bool          // whether the runner leads its fleet
	promoted chan struct{} // closed when leader turns true, then replaced
}

// NewLeadership returns a leadership that leads or not, as leader says.
func NewLeadership(leader bool) *Leadership {
	return &Leadership{leader: leader, promoted: make(chan struct{})}
}

// SetLeader makes the runner its fleet's leader or not.
func (l *Leadership) SetLeader(leader bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if leader && !l.leader {
		close(l.promoted)
		l.promoted = make(chan struct{})
	}
	l.leader = leader
}

// Leading says whether the runner leads, and returns a channel closed
// when it next becomes the leader.
func (l *Leadership) Leading() (leader bool, promoted <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leader, l.promoted
}

// Await returns once the runner is the leader, or ctx's error when ctx
// ends first.
func (l *Leadership) Await(ctx context.Context) error {
	leader, promoted := l.Leading()
	if leader {
		return nil
	}
	select {
	case <-promoted:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
