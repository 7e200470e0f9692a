package partmap

import "fmt"

// ReplayProtection is how a cluster's data-plane processes protect signed
// datagrams against replays (Map.ReplayProtection; docs/dataplane.md,
// Replay protection). Each setting accepts what the one before it sends,
// so a cluster moves up one step at a time, each once every process uses
// a map that has the step before.
type ReplayProtection string

// Replay protection settings, in the order a cluster moves through them.
const (
	// ReplayAccept sends signed datagrams without a stamp and accepts them
	// with or without one: what processes older than stamps do. A map
	// without the field says it, and older readers can read such a map.
	ReplayAccept ReplayProtection = ""
	// ReplayStamp stamps signed datagrams and accepts them with or
	// without a stamp.
	ReplayStamp ReplayProtection = "stamp"
	// ReplayRequire stamps signed datagrams and drops those received
	// without a stamp.
	ReplayRequire ReplayProtection = "require"
)

// ReplayProtections are the settings, weakest first.
var ReplayProtections = []ReplayProtection{ReplayAccept, ReplayStamp, ReplayRequire}

// Valid reports whether r is a known setting.
func (r ReplayProtection) Valid() bool {
	return r == ReplayAccept || r == ReplayStamp || r == ReplayRequire
}

// String is the setting's name as the --replay-protection flag spells it:
// "accept", "stamp" or "require".
func (r ReplayProtection) String() string {
	if r == ReplayAccept {
		return "accept"
	}
	return string(r)
}

func (m *Map) validateReplayProtection() error {
	if !m.ReplayProtection.Valid() {
		return fmt.Errorf("unknown replay protection %q: want %q or %q (or none)", m.ReplayProtection, ReplayStamp, ReplayRequire)
	}
	return nil
}
