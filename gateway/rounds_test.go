package gateway

import (
	"strings"
	"testing"

	"github.com/tidwall/redcon"
)

// commandsOf turns "GET a; SET b v" into commands.
func commandsOf(s string) []redcon.Command {
	var cmds []redcon.Command
	for _, c := range strings.Split(s, ";") {
		var args [][]byte
		for _, f := range strings.Fields(c) {
			args = append(args, []byte(f))
		}
		cmds = append(cmds, redcon.Command{Args: args})
	}
	return cmds
}

func TestRoundOf(t *testing.T) {
	srv := &Server{cfg: Config{MaxInFlight: 4}}
	tests := []struct {
		pipeline string
		kind     roundKind
		keys     int
	}{
		{"GET a", roundGets, 1},
		{"GET a; get b; MGET c d", roundGets, 4},
		{"MGET a b c d e", notARound, 0}, // more keys than MaxInFlight
		{"SET a 1; SET b 2", roundSets, 2},
		{"SET a 1; SET a 2", notARound, 0}, // one key twice: in order
		{"SET a 1 NX", notARound, 0},
		{"GET a; SET b 1", notARound, 0},
		{"SET a 1; GET a", notARound, 0},
		{"GET a b", notARound, 0},
		{"INCR a; DECR b; incr c", roundIncrs, 3},
		{"INCR a; INCR a", notARound, 0},
		{"INCRBY a 2", notARound, 0},
		{"INCR a; GET b", notARound, 0},
		{"PING", notARound, 0},
	}
	for _, tc := range tests {
		kind, keys := srv.roundOf(&session{}, commandsOf(tc.pipeline))
		if kind != tc.kind || keys != tc.keys {
			t.Errorf("roundOf(%q) = %d, %d keys; want %d, %d", tc.pipeline, kind, keys, tc.kind, tc.keys)
		}
	}
	// A session that must authenticate first runs its pipelines alone.
	srv.cfg.Users = &Users{}
	if kind, _ := srv.roundOf(&session{}, commandsOf("GET a")); kind != notARound {
		t.Errorf("an unauthenticated session's GET joined a round")
	}
}
