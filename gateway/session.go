package gateway

import (
	"context"

	"sync"
	"sync/atomic"

	"github.com/distcache/distcache/client"
)

// session is one connection's state.
type session struct {
	id     int64
	remote string
	local  string
	// mu guards the fields below: connection commands run alone, but
	// CLIENT INFO may read them from a pipeline's other commands.
	mu      sync.Mutex
	proto   int // 2 or 3 (HELLO)
	name    string
	libName string
	libVer  string
	// user is the authenticated user ("": none yet).
	user string
	// blockCtx is the context of the connection's blocking commands,
	// which blockCancel ends when the connection closes.
	blockCtx    context.Context
	blockCancel context.CancelFunc
	closed      bool
	// waitingAt is the blocking command's wait at Redis (nil: none).
	waitingAt *client.Blocked
	// quit is set by QUIT: the connection closes after its reply.
	quit atomic.Bool
	// pipe is reused from one pipeline to the next: only the
	// connection's goroutine (Server.serve) uses it.
	pipe pipeline
	// tx is the connection's transaction (tx.go): only the goroutine
	// running its pipeline uses it, or the connection's end after it.
	tx txState
}

// pipeline is a connection's scratch space for running a pipeline: what
// would otherwise be allocated again for every one.
type pipeline struct {
	out   [][]byte   // their replies (Server.execute)
	batch batch      // the batch being formed (Server.execute)
	gets  getScratch // Server.runGets'
}

func newSession(id int64, remote, local string) *session {
	return &session{id: id, remote: remote, local: local, proto: 2}
}

// blockingContext is the context of a blocking command of the
// connection: it ends when the connection closes, or parent ends.
func (s *session) blockingContext(parent context.Context) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.blockCtx == nil {
		s.blockCtx, s.blockCancel = context.WithCancel(parent)
		if s.closed {
			s.blockCancel()
		}
	}
	return s.blockCtx
}

// setWaiting records the wait of the connection's blocking command (nil:
// it ended).
func (s *session) setWaiting(b *client.Blocked) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waitingAt = b
}

// waiting is the wait of the connection's blocking command, if any.
func (s *session) waiting() *client.Blocked {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waitingAt
}

// close ends the connection's blocking commands; its transaction ends
// with its pipeline (txState.end).
func (s *session) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.blockCancel != nil {
		s.blockCancel()
	}
}

// queuing says whether the connection's commands queue for EXEC: they
// then run one at a time, in order.
func (s *session) queuing() bool { return s.tx.queuing }

// resp3 says whether replies use RESP3.
func (s *session) resp3() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proto == 3
}
