package transport

import (
	"fmt"
	"net/netip"

	"github.com/distcache/distcache/dataplane/wire"
)

// ReplayMode is how an endpoint with a data-plane key protects signed
// datagrams against replays (Config.Replay). Each mode accepts what the
// one before it sends, so a cluster moves from one to the next a process
// at a time: every process to a version that knows stamps (accept), then
// every process to stamp, then every process to require.
type ReplayMode int

// Replay modes.
const (
	// ReplayAccept sends signed datagrams without a stamp, as versions
	// before stamps do, and accepts them with or without one (a stamp is
	// checked).
	ReplayAccept ReplayMode = iota
	// ReplayStamp stamps signed datagrams and accepts them with or
	// without a stamp.
	ReplayStamp
	// ReplayRequire stamps signed datagrams and drops those received
	// without a stamp: only here is every signed datagram protected.
	ReplayRequire
)

var replayModeNames = [...]string{"accept", "stamp", "require"}

func (m ReplayMode) String() string {
	if m >= 0 && int(m) < len(replayModeNames) {
		return replayModeNames[m]
	}
	return fmt.Sprintf("ReplayMode(%d)", int(m))
}

// ParseReplayMode parses "accept", "stamp" or "require".
func ParseReplayMode(s string) (ReplayMode, error) {
	for i, n := range replayModeNames {
		if s == n {
			return ReplayMode(i), nil
		}
	}
	return 0, fmt.Errorf("cannot parse replay mode %q: want accept, stamp or require", s)
}

// trailer is the number of bytes the endpoint's datagrams of op to peer
// carry after their value bytes (wire.Trailer).
func (e *Endpoint) trailer(op wire.Op, peer netip.AddrPort) int {
	signs := e.signs(op, peer)
	return wire.Trailer(signs, signs && e.cfg.Replay >= ReplayStamp)
}
