package gateway

import (
	"sync"
	"sync/atomic"

	"github.com/tidwall/redcon"
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
	// quit is set by QUIT: the connection closes after its reply.
	quit atomic.Bool
	// pipe is reused from one pipeline to the next: only the
	// connection's goroutine (Server.serve) uses it.
	pipe pipeline
}

// pipeline is a connection's scratch space for running a pipeline: what
// would otherwise be allocated again for every one.
type pipeline struct {
	cmds  []redcon.Command // the commands read
	out   [][]byte         // their replies (Server.execute)
	batch batch            // the batch being formed (Server.execute)
	gets  getScratch       // Server.runGets'
}

func newSession(id int64, remote, local string) *session {
	return &session{id: id, remote: remote, local: local, proto: 2}
}

// resp3 says whether replies use RESP3.
func (s *session) resp3() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proto == 3
}
